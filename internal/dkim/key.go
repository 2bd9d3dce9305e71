package dkim

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/relayq/relayq/internal/dirsync"
)

// KeyType is the algorithm of a signing key.
type KeyType string

// The key types DKIM knows (k= in the DNS record).
const (
	KeyRSA     KeyType = "rsa"
	KeyEd25519 KeyType = "ed25519"
)

// MinRSABits is the smallest RSA key accepted; RFC 8301 section 3.2 makes
// verifiers refuse anything shorter. 2048 is the default for new keys.
const MinRSABits = 1024

// DefaultRSABits is the size of a generated RSA key unless told otherwise.
const DefaultRSABits = 2048

// Key is one signing key: d= Domain, s= Selector.
type Key struct {
	Domain   string
	Selector string
	Signer   crypto.Signer // *rsa.PrivateKey or ed25519.PrivateKey
	// File is where the key was loaded from, for messages; may be "".
	File string
}

// LoadKey reads a PEM private key (RSA as PKCS#1 or PKCS#8, Ed25519 as
// PKCS#8). Every error names the file.
func LoadKey(path string) (crypto.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dkim: key %w", err) // *PathError names the file
	}
	k, err := ParseKey(b)
	if err != nil {
		return nil, fmt.Errorf("dkim: key %s: %w", path, err)
	}
	return k, nil
}

// ParseKey decodes the first PEM block of b as a DKIM signing key.
func ParseKey(b []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block found (want \"-----BEGIN PRIVATE KEY-----\")")
	}
	if _, encrypted := block.Headers["Proc-Type"]; encrypted {
		return nil, errors.New("the key is encrypted; relayq needs it unencrypted (mode 0600)")
	}
	var (
		k   any
		err error
	)
	switch block.Type {
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("PEM block %q is not a private key (want PRIVATE KEY or RSA PRIVATE KEY)", block.Type)
	}
	if err != nil {
		return nil, err
	}
	switch k := k.(type) {
	case *rsa.PrivateKey:
		if n := k.N.BitLen(); n < MinRSABits {
			return nil, fmt.Errorf("RSA key of %d bits; at least %d are needed (2048 recommended)", n, MinRSABits)
		}
		return k, nil
	case ed25519.PrivateKey:
		return k, nil
	default:
		return nil, fmt.Errorf("%T is neither an RSA nor an Ed25519 key", k)
	}
}

// TypeOf says which DKIM key type pub is, or "" for neither.
func TypeOf(pub crypto.PublicKey) KeyType {
	switch pub.(type) {
	case *rsa.PublicKey:
		return KeyRSA
	case ed25519.PublicKey:
		return KeyEd25519
	}
	return ""
}

// GenerateKey makes a new key; bits matters only for RSA (0 means
// DefaultRSABits).
func GenerateKey(t KeyType, bits int) (crypto.Signer, error) {
	switch t {
	case KeyRSA:
		if bits == 0 {
			bits = DefaultRSABits
		}
		if bits < MinRSABits || bits > 8192 {
			return nil, fmt.Errorf("dkim: %d bits: RSA keys must have %d to 8192 bits", bits, MinRSABits)
		}
		return rsa.GenerateKey(rand.Reader, bits)
	case KeyEd25519:
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	}
	return nil, fmt.Errorf("dkim: key type %q is not rsa or ed25519", t)
}

// WriteKeyFile stores k as PKCS#8 PEM in a new file of mode 0600. It
// never overwrites: a key that is in use must not vanish by a typo.
func WriteKeyFile(path string, k crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return fmt.Errorf("dkim: key %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("dkim: key %w", err)
	}
	err = pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	// The key is published in DNS once this returns: a power cut must
	// not take the file, or its name, away again.
	if err == nil {
		err = dirsync.Parent(path)
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("dkim: key %s: %w", path, err)
	}
	return nil
}

// RecordName is the DNS name of a selector's key record, fully qualified.
func RecordName(domain, selector string) string {
	return selector + "._domainkey." + strings.TrimSuffix(domain, ".") + "."
}

// RecordValue is the TXT record text publishing pub (RFC 6376 section
// 3.6.1): the SubjectPublicKeyInfo for RSA, the raw 32 bytes for Ed25519
// (RFC 8463 section 4.2).
func RecordValue(pub crypto.PublicKey) (string, error) {
	var p []byte
	switch pub := pub.(type) {
	case *rsa.PublicKey:
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			return "", err
		}
		p = der
	case ed25519.PublicKey:
		p = pub
	default:
		return "", fmt.Errorf("dkim: %T is neither an RSA nor an Ed25519 key", pub)
	}
	return fmt.Sprintf("v=DKIM1; k=%s; p=%s", TypeOf(pub), base64.StdEncoding.EncodeToString(p)), nil
}

// SplitTXT cuts v into the character-strings of one TXT record, each at
// most 255 bytes (RFC 1035 section 3.3); resolvers join them again.
func SplitTXT(v string) []string {
	var out []string
	for len(v) > 255 {
		out = append(out, v[:255])
		v = v[255:]
	}
	return append(out, v)
}

// ZoneLine is the record to publish, in zone file form:
//
//	s._domainkey.example.org. IN TXT "v=DKIM1; k=rsa; p=MII..." "...".
func ZoneLine(domain, selector string, pub crypto.PublicKey) (string, error) {
	v, err := RecordValue(pub)
	if err != nil {
		return "", err
	}
	parts := SplitTXT(v)
	for i, p := range parts {
		parts[i] = `"` + p + `"`
	}
	return RecordName(domain, selector) + " IN TXT " + strings.Join(parts, " "), nil
}
