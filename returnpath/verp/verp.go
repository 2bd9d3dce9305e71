package verp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Errors of Verify. ErrOtherDomain is the "not ours" case (RFC 5321
// section 3.6.2: no relaying), ErrForged any local part that is not one
// of ours (no such mailbox).
var (
	ErrOtherDomain = errors.New("verp: not an address of the bounce domain")
	ErrForged      = errors.New("verp: local part is not a signed relayq address")
)

// MinKeyBytes is the shortest secret New accepts: 128 bits.
const MinKeyBytes = 16

const (
	prefix  = "rq-"
	idBytes = 10
	macLen  = 10
	tagLen  = idBytes + 2 + macLen
	// LocalLen is the length of every local part Address makes.
	LocalLen = len(prefix) + (tagLen*8+4)/5
)

var enc = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Signer makes and verifies the addresses of one bounce domain.
type Signer struct {
	domain string
	key    []byte
}

// Tag is what an address names: the message and which of its recipients.
type Tag struct {
	QueueID   string
	Recipient int
}

// New returns a Signer for domain with key (at least MinKeyBytes).
func New(domain string, key []byte) (*Signer, error) {
	domain = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(domain), "."))
	if domain == "" || strings.ContainsAny(domain, "@ <>") {
		return nil, fmt.Errorf("verp: domain %q is not a domain", domain)
	}
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("verp: key of %d bytes, at least %d needed", len(key), MinKeyBytes)
	}
	return &Signer{domain: domain, key: append([]byte(nil), key...)}, nil
}

// Domain is the bounce domain, lower-cased.
func (s *Signer) Domain() string { return s.domain }

// Address is the envelope sender for recipient index rcpt of the message
// queueID (20 hex digits, as queue makes them).
func (s *Signer) Address(queueID string, rcpt int) (string, error) {
	id, err := hex.DecodeString(queueID)
	if err != nil || len(id) != idBytes {
		return "", fmt.Errorf("verp: queue ID %q is not 20 hex digits", queueID)
	}
	if rcpt < 0 || rcpt > 0xffff {
		return "", fmt.Errorf("verp: recipient index %d out of range", rcpt)
	}
	tag := make([]byte, 0, tagLen)
	tag = append(tag, id...)
	tag = binary.BigEndian.AppendUint16(tag, uint16(rcpt))
	tag = append(tag, s.mac(tag)...)
	return prefix + enc.EncodeToString(tag) + "@" + s.domain, nil
}

// Verify returns the tag of addr, or ErrOtherDomain or ErrForged.
func (s *Signer) Verify(addr string) (Tag, error) {
	at := strings.LastIndexByte(addr, '@')
	if at < 0 || !strings.EqualFold(strings.TrimSuffix(addr[at+1:], "."), s.domain) {
		return Tag{}, ErrOtherDomain
	}
	local := addr[:at]
	if len(local) != LocalLen || !strings.EqualFold(local[:len(prefix)], prefix) {
		return Tag{}, ErrForged
	}
	text := strings.ToLower(local[len(prefix):])
	tag, err := enc.DecodeString(text)
	// The last character carries 4 unused bits: only their canonical
	// (zero) form is ours, so one tag has one address.
	if err != nil || len(tag) != tagLen || enc.EncodeToString(tag) != text {
		return Tag{}, ErrForged
	}
	if !hmac.Equal(tag[idBytes+2:], s.mac(tag[:idBytes+2])) {
		return Tag{}, ErrForged
	}
	return Tag{
		QueueID:   strings.ToUpper(hex.EncodeToString(tag[:idBytes])),
		Recipient: int(binary.BigEndian.Uint16(tag[idBytes:])),
	}, nil
}

// mac is the truncated HMAC of the message part of a tag; the label keeps
// the key from ever signing anything else the same way.
func (s *Signer) mac(msg []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte("relayq verp v1\x00"))
	h.Write(msg)
	return h.Sum(nil)[:macLen]
}
