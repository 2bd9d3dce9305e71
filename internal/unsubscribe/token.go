package unsubscribe

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/relayq/relayq/internal/identity"
)

// ErrForged is Verify's answer to any token it did not make.
var ErrForged = errors.New("unsubscribe: not a link relayq signed")

// MinKeyBytes is the shortest secret New accepts: 128 bits.
const MinKeyBytes = 16

const (
	version = 1
	idBytes = 10
	macLen  = 16
	// maxToken bounds what Verify decodes: three fields of at most 255
	// octets and the fixed part.
	maxToken = 1200
)

var enc = base64.RawURLEncoding

// Target is what a link names: the message, its recipient and who sent it.
type Target struct {
	Sender    identity.Sender
	QueueID   string
	Recipient string
}

// Signer makes and checks the links of one base URL.
type Signer struct {
	base string
	key  []byte
}

// New returns a Signer for links under base (https://host[/path]) with key.
func New(base string, key []byte) (*Signer, error) {
	base = strings.TrimRight(strings.TrimSpace(base), "/")
	if !strings.HasPrefix(base, "https://") || len(base) <= len("https://") {
		return nil, fmt.Errorf("unsubscribe: %q is not an https URL", base)
	}
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("unsubscribe: key of %d bytes, at least %d needed", len(key), MinKeyBytes)
	}
	return &Signer{base: base, key: append([]byte(nil), key...)}, nil
}

// Link is the one-click URL for recipient of message queueID sent by
// sender (preflight.Linker).
func (s *Signer) Link(sender identity.Sender, queueID, recipient string) (string, error) {
	tok, err := s.Token(Target{Sender: sender, QueueID: queueID, Recipient: recipient})
	if err != nil {
		return "", err
	}
	return s.base + "/u/" + tok, nil
}

// Token signs t.
func (s *Signer) Token(t Target) (string, error) {
	id, err := hex.DecodeString(t.QueueID)
	if err != nil || len(id) != idBytes {
		return "", fmt.Errorf("unsubscribe: queue ID %q is not 20 hex digits", t.QueueID)
	}
	b := []byte{version}
	b = append(b, id...)
	for _, f := range []string{t.Sender.Tenant, t.Sender.Stream, t.Recipient} {
		if len(f) > 255 {
			return "", fmt.Errorf("unsubscribe: %d octets in a link field, at most 255", len(f))
		}
		b = append(b, byte(len(f)))
		b = append(b, f...)
	}
	b = append(b, s.mac(b)...)
	return enc.EncodeToString(b), nil
}

// Verify returns the target of a token s made, or ErrForged.
func (s *Signer) Verify(tok string) (Target, error) {
	if len(tok) > maxToken {
		return Target{}, ErrForged
	}
	// One spelling per token: the decoder skips CR and LF, so without
	// this check a link with them inside would pass as the same token.
	if strings.ContainsAny(tok, "\r\n") {
		return Target{}, ErrForged
	}
	b, err := enc.Strict().DecodeString(tok)
	if err != nil || len(b) < 1+idBytes+3+macLen || b[0] != version {
		return Target{}, ErrForged
	}
	msg, mac := b[:len(b)-macLen], b[len(b)-macLen:]
	if !hmac.Equal(mac, s.mac(msg)) {
		return Target{}, ErrForged
	}
	t := Target{QueueID: strings.ToUpper(hex.EncodeToString(msg[1 : 1+idBytes]))}
	rest := msg[1+idBytes:]
	fields := make([]string, 3)
	for i := range fields {
		if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
			return Target{}, ErrForged
		}
		n := int(rest[0])
		fields[i], rest = string(rest[1:1+n]), rest[1+n:]
	}
	if len(rest) != 0 || fields[2] == "" {
		return Target{}, ErrForged
	}
	t.Sender.Tenant, t.Sender.Stream, t.Recipient = fields[0], fields[1], fields[2]
	return t, nil
}

// mac is the truncated HMAC of a token's message part; the label keeps
// the key from signing anything else the same way.
func (s *Signer) mac(msg []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte("relayq unsubscribe v1\x00"))
	h.Write(msg)
	return h.Sum(nil)[:macLen]
}

// once is the key a target's unsubscribe is recorded under at most once.
func (t Target) once() string {
	return "unsub:" + t.QueueID + ":" + strings.ToLower(t.Recipient)
}
