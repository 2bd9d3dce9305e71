package dkim

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/relayq/relayq/internal/clock"
)

// MaxHeaderBytes bounds the header section a Message buffers to find the
// From: field. A message with a longer header section cannot be signed.
const MaxHeaderBytes = 1 << 20

// Config is a complete signing configuration.
type Config struct {
	Keys []Key
	// Headers are the fields to sign when present; empty means DefaultHeaders.
	Headers []string
	// Expiration sets x= this long after signing; 0 means no x=.
	Expiration time.Duration
}

// keySet is a Config prepared for lookups.
type keySet struct {
	byDomain   map[string][]signingKey
	headers    *headerSet
	expiration time.Duration
}

// Signer signs messages with the current Config. It is safe for concurrent
// use; the zero value signs nothing until Update.
type Signer struct {
	set   atomic.Pointer[keySet]
	clock clock.Clock // t= and x=; nil means clock.Real (tests set it)
}

// NewSigner returns a Signer using c.
func NewSigner(c Config) *Signer {
	s := &Signer{}
	s.Update(c)
	return s
}

// Update replaces the configuration (SIGHUP). Messages already started
// finish with the keys they began with.
func (s *Signer) Update(c Config) {
	headers := c.Headers
	if len(headers) == 0 {
		headers = DefaultHeaders
	}
	ks := &keySet{byDomain: map[string][]signingKey{}, headers: newHeaderSet(headers), expiration: c.Expiration}
	for _, k := range c.Keys {
		d := strings.ToLower(strings.TrimSuffix(k.Domain, "."))
		ks.byDomain[d] = append(ks.byDomain[d], checkKey(k))
	}
	s.set.Store(ks)
}

// keysFor returns the keys of the most specific configured domain that is
// domain or a parent of it, among those allow allows (nil: all).
func (ks *keySet) keysFor(domain string, allow KeyFilter) []signingKey {
	for d := domain; d != ""; {
		keys := ks.byDomain[d]
		if allow != nil {
			keys = allowed(keys, allow)
		}
		if len(keys) > 0 {
			return keys
		}
		_, parent, ok := strings.Cut(d, ".")
		if !ok {
			break
		}
		d = parent
	}
	return nil
}

// KeyFilter says whether a message may be signed with the key of domain
// (lower case) and selector: a tenant's mail only with its own keys.
type KeyFilter func(domain, selector string) bool

// allowed is the keys allow allows, in their order.
func allowed(keys []signingKey, allow KeyFilter) []signingKey {
	var out []signingKey
	for _, k := range keys {
		if allow(strings.ToLower(strings.TrimSuffix(k.Domain, ".")), k.Selector) {
			out = append(out, k)
		}
	}
	return out
}

// Active reports whether s has keys to sign with now; without them Begin's
// Message lets every byte pass unsigned, so a caller may skip it.
func (s *Signer) Active() bool {
	ks := s.set.Load()
	return ks != nil && len(ks.byDomain) > 0
}

// Begin starts signing one message: write all of it to the returned
// Message, then call Finish. Close it in any case.
func (s *Signer) Begin() *Message { return s.BeginWith(nil) }

// BeginWith is Begin for a message that may be signed only with the keys
// allow allows (nil: every key); a From: domain whose keys it all refuses
// falls back to the parent domain's, as a domain without keys does.
func (s *Signer) BeginWith(allow KeyFilter) *Message {
	ks := s.set.Load()
	if ks == nil || len(ks.byDomain) == 0 {
		return &Message{state: stateIdle}
	}
	clk := s.clock
	if clk == nil {
		clk = clock.Real
	}
	return &Message{set: ks, clock: clk, allow: allow}
}

// Sign returns msg with its DKIM-Signature fields in front, for messages
// relayq writes itself (bounces, delay notices), which are small and whole.
func (s *Signer) Sign(msg []byte) ([]byte, error) {
	m := s.Begin()
	defer m.Close()
	m.Write(msg)
	prefix, err := m.Finish()
	if err != nil || len(prefix) == 0 {
		return msg, err
	}
	return append(prefix, msg...), nil
}

type state int

const (
	stateHeader  state = iota // buffering the header section
	stateSigning              // hashing the body
	stateIdle                 // nothing to sign: bytes pass by
	stateFailed
	stateDone
)

// Message signs one message as it streams by. Write never fails, so it can
// sit beside the queue draft in an io.MultiWriter; a problem is reported by
// Finish. A Message is used by one goroutine.
//
// The body is canonicalized and hashed once for all keys (they share
// relaxed/relaxed and SHA-256), and the signed header fields are
// canonicalized once when the header section is complete, so only the
// DKIM-Signature field and the private-key operation are per key.
type Message struct {
	set   *keySet
	allow KeyFilter // nil: every key
	clock clock.Clock
	state state
	hdr   []byte
	keys  []signingKey
	hkeys []string  // h=
	canon []byte    // the signed header fields, relaxed, in h= order
	exp   time.Time // x=, or zero
	body  bodyHasher
	err   error
}

// signingKey is a Key with what signing needs to know about it, found
// once by Update, or why it cannot sign (reported by the messages that
// would use it, as go-msgauth's NewSigner did).
type signingKey struct {
	Key
	algo string      // a=
	hash crypto.Hash // what Signer.Sign is told: 0 for Ed25519
	err  error
}

// Write implements io.Writer; it always accepts all of p.
func (m *Message) Write(p []byte) (int, error) {
	switch m.state {
	case stateHeader:
		if len(m.hdr) == 0 {
			// The common case: the first write holds the whole header
			// section, so it need not be copied.
			if end := headerEnd(p, 0); end >= 0 && end <= MaxHeaderBytes {
				m.start(p, end)
				return len(p), nil
			}
		}
		old := len(m.hdr)
		m.hdr = append(m.hdr, p...)
		// The bound holds whatever the writes' sizes: a header section
		// found complete but over MaxHeaderBytes is an overflow too.
		end := headerEnd(m.hdr, old)
		switch {
		case end >= 0 && end <= MaxHeaderBytes:
			buf := m.hdr
			m.hdr = nil
			m.start(buf, end)
		case end >= 0:
			m.hdr = m.hdr[:end]
			m.overflow()
		case len(m.hdr) > MaxHeaderBytes:
			m.overflow()
		}
	case stateSigning:
		m.body.Write(p)
	}
	return len(p), nil
}

// start picks the keys for the header section buf[:end] and, when there
// are any, canonicalizes the fields to sign and hashes the rest of buf as
// the start of the body.
func (m *Message) start(buf []byte, end int) {
	hs := string(buf[:end])
	fields := parseFieldsString(hs)
	domain := fromDomain(fields)
	if domain == "" {
		m.state = stateIdle
		return
	}
	done := signedBy(fields)
	for _, k := range m.set.keysFor(domain, m.allow) {
		if done[strings.ToLower(strings.TrimSuffix(k.Domain, "."))+" "+strings.ToLower(k.Selector)] {
			continue
		}
		if k.err != nil {
			m.fail(fmt.Errorf("dkim: d=%s s=%s: %w", k.Domain, k.Selector, k.err))
			return
		}
		m.keys = append(m.keys, k)
	}
	if len(m.keys) == 0 {
		m.state = stateIdle
		return
	}
	raw, bodyAt, ok := rawFields(hs)
	if !ok {
		// As go-msgauth: a header section without its empty line.
		m.fail(errors.New("dkim: signing: failed to read header: EOF"))
		return
	}
	m.hkeys = m.set.headers.keys(fields)
	if m.set.expiration > 0 {
		m.exp = m.clock.Now().Add(m.set.expiration)
	}
	m.canon = appendPicked(make([]byte, 0, len(hs)), raw, m.hkeys)
	m.body.h = sha256.New()
	m.state = stateSigning
	m.body.Write(buf[bodyAt:])
}

// checkKey makes the checks go-msgauth's NewSigner makes on a key.
func checkKey(k Key) signingKey {
	sk := signingKey{Key: k, hash: crypto.SHA256}
	switch {
	case k.Domain == "":
		sk.err = errors.New("dkim: no domain specified")
	case k.Selector == "":
		sk.err = errors.New("dkim: no selector specified")
	case k.Signer == nil:
		sk.err = errors.New("dkim: no signer specified")
	}
	if sk.err != nil {
		return sk
	}
	switch pub := k.Signer.Public().(type) {
	case *rsa.PublicKey:
		sk.algo = "rsa-sha256"
		if rk, ok := k.Signer.(*rsa.PrivateKey); ok {
			sk.Signer = rsaSigner(rk)
		}
	case ed25519.PublicKey:
		// Ed25519 signs the hash itself (RFC 8463), not a pre-hash.
		sk.algo, sk.hash = "ed25519-sha256", 0
	default:
		sk.err = fmt.Errorf("dkim: unsupported key algorithm %T", pub)
	}
	return sk
}

// precomputed returns k with its CRT values (Precompute) filled in, on a
// copy, so that a caller's key is never written to. crypto/rsa signs a key
// without them by deriving them again for every signature (a modular
// inverse and the Montgomery set-up of p, q and N: about as much CPU as
// the signature itself); x509's parsers fill them in, a key built from its
// numbers does not.
func precomputed(k *rsa.PrivateKey) *rsa.PrivateKey {
	c := *k
	c.Precompute() // a no-op when they are there already
	return &c
}

// overflow handles a header section longer than MaxHeaderBytes: fine when
// the fields seen so far show nothing to sign, an error otherwise.
func (m *Message) overflow() {
	fields := parseFields(m.hdr)
	d := fromDomain(fields)
	if (d == "" && len(m.set.byDomain) > 0) || len(m.set.keysFor(d, m.allow)) > 0 {
		m.fail(fmt.Errorf("dkim: header section longer than %d bytes", MaxHeaderBytes))
		return
	}
	m.hdr, m.state = nil, stateIdle
}

func (m *Message) fail(err error) {
	if m.err == nil {
		m.err = err
	}
	m.state = stateFailed
	m.hdr = nil
}

// Finish ends the message and returns the DKIM-Signature header fields to
// put in front of it (nil when the message needs no signature), or the
// reason it could not be signed.
func (m *Message) Finish() ([]byte, error) {
	if m.state == stateHeader {
		// The message ended inside its header section (no empty line, no
		// body): sign it as a header with an empty body, which is how
		// verifiers read it.
		buf := append(m.hdr, "\r\n"...)
		m.hdr = nil
		m.start(buf, len(buf))
	}
	st := m.state
	m.state = stateDone
	switch st {
	case stateFailed:
		return nil, m.err
	case stateSigning:
		return m.sign()
	}
	return nil, nil
}

// sign makes one DKIM-Signature field per key, laid out as go-msgauth
// lays them out.
func (m *Message) sign() ([]byte, error) {
	bh := base64.StdEncoding.EncodeToString(m.body.Sum())
	h := m.body.h
	t := strconv.FormatInt(m.clock.Now().Unix(), 10)
	hkeys := strings.Join(m.hkeys, ":")
	var errs []error
	prefix := make([]byte, 0, 512*len(m.keys))
	field := make([]byte, 0, 512)
	for _, k := range m.keys {
		tags := append(make([]tag, 0, 9),
			tag{"a", k.algo}, tag{"bh", bh}, tag{"c", "relaxed/relaxed"}, tag{"d", k.Domain},
			tag{"h", hkeys}, tag{"s", k.Selector}, tag{"t", t}, tag{"v", "1"})
		if !m.exp.IsZero() {
			tags = append(tags, tag{"x", strconv.FormatInt(m.exp.Unix(), 10)})
		}
		field = appendSignatureField(field[:0], tags, "")
		h.Reset()
		h.Write(m.canon)
		h.Write(appendRelaxedHeader(field[len(field):], string(field)))
		sig, err := k.Signer.Sign(rand.Reader, h.Sum(nil), k.hash)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		prefix = appendSignatureField(prefix, tags, base64.StdEncoding.EncodeToString(sig))
	}
	m.keys = nil
	if len(errs) > 0 {
		return nil, fmt.Errorf("dkim: signing: %w", errors.Join(errs...))
	}
	return prefix, nil
}

// Close releases a Message that was not finished (the upload broke off).
func (m *Message) Close() {
	m.state = stateDone
	m.keys, m.hdr, m.canon = nil, nil, nil
	m.body = bodyHasher{}
}
