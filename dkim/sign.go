package dkim

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	msgauth "github.com/emersion/go-msgauth/dkim"
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
	byDomain   map[string][]Key
	headers    []string
	expiration time.Duration
}

// Signer signs messages with the current Config. It is safe for concurrent
// use; the zero value signs nothing until Update.
type Signer struct {
	set atomic.Pointer[keySet]
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
	ks := &keySet{byDomain: map[string][]Key{}, headers: c.Headers, expiration: c.Expiration}
	if len(ks.headers) == 0 {
		ks.headers = DefaultHeaders
	}
	for _, k := range c.Keys {
		d := strings.ToLower(strings.TrimSuffix(k.Domain, "."))
		ks.byDomain[d] = append(ks.byDomain[d], k)
	}
	s.set.Store(ks)
}

// keysFor returns the keys of the most specific configured domain that is
// domain or a parent of it.
func (ks *keySet) keysFor(domain string) []Key {
	for d := domain; d != ""; {
		if keys := ks.byDomain[d]; len(keys) > 0 {
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

// Begin starts signing one message: write all of it to the returned
// Message, then call Finish. Close it in any case.
func (s *Signer) Begin() *Message {
	ks := s.set.Load()
	if ks == nil || len(ks.byDomain) == 0 {
		return &Message{state: stateIdle}
	}
	return &Message{set: ks}
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
	stateSigning              // feeding the signers
	stateIdle                 // nothing to sign: bytes pass by
	stateFailed
	stateDone
)

// Message signs one message as it streams by. Write never fails, so it can
// sit beside the queue draft in an io.MultiWriter; a problem is reported by
// Finish. A Message is used by one goroutine.
type Message struct {
	set     *keySet
	state   state
	hdr     []byte
	signers []*msgauth.Signer
	err     error
}

// Write implements io.Writer; it always accepts all of p.
func (m *Message) Write(p []byte) (int, error) {
	switch m.state {
	case stateHeader:
		old := len(m.hdr)
		m.hdr = append(m.hdr, p...)
		// The bound holds whatever the writes' sizes: a header section
		// found complete but over MaxHeaderBytes is an overflow too.
		end := headerEnd(m.hdr, old)
		switch {
		case end >= 0 && end <= MaxHeaderBytes:
			m.start(parseFields(m.hdr[:end]))
		case end >= 0:
			m.hdr = m.hdr[:end]
			m.overflow()
		case len(m.hdr) > MaxHeaderBytes:
			m.overflow()
		}
	case stateSigning:
		m.feed(p)
	}
	return len(p), nil
}

// start picks the keys for the complete header fields and starts one
// signer per key, feeding them what was buffered.
func (m *Message) start(fields []field) {
	buf := m.hdr
	m.hdr = nil
	domain := fromDomain(fields)
	if domain == "" {
		m.state = stateIdle
		return
	}
	done := signedBy(fields)
	hkeys := headerKeys(fields, m.set.headers)
	var exp time.Time
	if m.set.expiration > 0 {
		exp = time.Now().Add(m.set.expiration)
	}
	for _, k := range m.set.keysFor(domain) {
		if done[strings.ToLower(strings.TrimSuffix(k.Domain, "."))+" "+strings.ToLower(k.Selector)] {
			continue
		}
		s, err := msgauth.NewSigner(&msgauth.SignOptions{
			Domain: k.Domain, Selector: k.Selector, Signer: k.Signer,
			HeaderCanonicalization: msgauth.CanonicalizationRelaxed,
			BodyCanonicalization:   msgauth.CanonicalizationRelaxed,
			HeaderKeys:             hkeys,
			Expiration:             exp,
		})
		if err != nil {
			m.fail(fmt.Errorf("dkim: d=%s s=%s: %w", k.Domain, k.Selector, err))
			return
		}
		m.signers = append(m.signers, s)
	}
	if len(m.signers) == 0 {
		m.state = stateIdle
		return
	}
	m.state = stateSigning
	m.feed(buf)
}

// overflow handles a header section longer than MaxHeaderBytes: fine when
// the fields seen so far show nothing to sign, an error otherwise.
func (m *Message) overflow() {
	fields := parseFields(m.hdr)
	d := fromDomain(fields)
	if (d == "" && len(m.set.byDomain) > 0) || len(m.set.keysFor(d)) > 0 {
		m.fail(fmt.Errorf("dkim: header section longer than %d bytes", MaxHeaderBytes))
		return
	}
	m.hdr, m.state = nil, stateIdle
}

func (m *Message) feed(p []byte) {
	for _, s := range m.signers {
		if _, err := s.Write(p); err != nil {
			m.fail(fmt.Errorf("dkim: signing: %w", err))
			return
		}
	}
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
		m.hdr = append(m.hdr, "\r\n"...)
		m.start(parseFields(m.hdr))
	}
	st := m.state
	m.state = stateDone
	var errs []error
	var prefix []byte
	for _, s := range m.signers {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
			continue
		}
		prefix = append(prefix, s.Signature()...)
	}
	m.signers = nil
	if st == stateFailed {
		return nil, m.err
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("dkim: signing: %w", errors.Join(errs...))
	}
	return prefix, nil
}

// Close releases a Message that was not finished (the upload broke off).
func (m *Message) Close() {
	if m.state == stateDone {
		return
	}
	m.state = stateDone
	for _, s := range m.signers {
		_ = s.Close()
	}
	m.signers, m.hdr = nil, nil
}
