package dkim

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Record is a parsed DKIM key record (RFC 6376 section 3.6.1).
type Record struct {
	Type KeyType
	// Key is the decoded p= value: SubjectPublicKeyInfo DER (or PKCS#1) for
	// RSA, 32 raw bytes for Ed25519. Empty means the key was revoked.
	Key []byte
}

// ParseRecord reads the text of one TXT record (its strings joined).
func ParseRecord(txt string) (Record, error) {
	r := Record{Type: KeyRSA}
	seen := map[string]bool{}
	hasP := false
	for i, tag := range strings.Split(txt, ";") {
		k, v, ok := strings.Cut(tag, "=")
		k = strings.TrimSpace(k)
		if !ok {
			if strings.TrimSpace(tag) == "" {
				continue
			}
			return Record{}, fmt.Errorf("dkim: record: %q is not tag=value", strings.TrimSpace(tag))
		}
		if seen[k] {
			return Record{}, fmt.Errorf("dkim: record: tag %s twice", k)
		}
		seen[k] = true
		v = strings.Join(strings.Fields(v), "")
		switch k {
		case "v":
			if i != 0 || v != "DKIM1" {
				return Record{}, fmt.Errorf("dkim: record: v=%s: want v=DKIM1 as the first tag", v)
			}
		case "k":
			r.Type = KeyType(strings.ToLower(v))
		case "p":
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return Record{}, fmt.Errorf("dkim: record: p= is not base64: %w", err)
			}
			r.Key, hasP = b, true
		}
	}
	if !hasP {
		return Record{}, errors.New("dkim: record has no p= tag")
	}
	return r, nil
}

// PublicKey decodes the record's key.
func (r Record) PublicKey() (crypto.PublicKey, error) {
	if len(r.Key) == 0 {
		return nil, errors.New("dkim: the key is revoked (empty p=)")
	}
	switch r.Type {
	case KeyRSA:
		if k, err := x509.ParsePKIXPublicKey(r.Key); err == nil {
			return k, nil
		}
		k, err := x509.ParsePKCS1PublicKey(r.Key)
		if err != nil {
			return nil, fmt.Errorf("dkim: p= is not an RSA public key: %w", err)
		}
		return k, nil
	case KeyEd25519:
		if len(r.Key) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("dkim: p= has %d bytes; an Ed25519 key has %d", len(r.Key), ed25519.PublicKeySize)
		}
		return ed25519.PublicKey(r.Key), nil
	}
	return nil, fmt.Errorf("dkim: key type k=%s is not rsa or ed25519", r.Type)
}

// TXTResolver looks up TXT records; *net.Resolver is one.
type TXTResolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// Check looks up k's record and reports whether it publishes the public
// half of k. nil means it does.
func Check(ctx context.Context, r TXTResolver, k Key) error {
	name := RecordName(k.Domain, k.Selector)
	txts, err := r.LookupTXT(ctx, name)
	if err != nil {
		return fmt.Errorf("dkim: lookup %s: %w", name, err)
	}
	if len(txts) == 0 {
		return fmt.Errorf("dkim: %s: no TXT record", name)
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	var errs []error
	for _, txt := range txts {
		rec, err := ParseRecord(txt)
		var pub crypto.PublicKey
		if err == nil {
			pub, err = rec.PublicKey()
		}
		switch {
		case err != nil:
			errs = append(errs, err)
		case pub.(equaler).Equal(k.Signer.Public()):
			return nil
		default:
			errs = append(errs, fmt.Errorf("dkim: the published %s key is not the public half of %s", rec.Type, keyName(k)))
		}
	}
	return fmt.Errorf("%s: %w", name, errors.Join(errs...))
}

func keyName(k Key) string {
	if k.File != "" {
		return k.File
	}
	return "the private key"
}
