package submission

import (
	"errors"
	"strings"
	"sync"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/logbuf"
	"github.com/relayq/relayq/queue"
)

// Idempotency keys: a client that retries a submission whose reply it
// never saw (an HTTP timeout, a DATA whose 250 was lost: RFC 1047's
// duplicate) gives the same key, and relayq answers what it answered the
// first time instead of queueing the message again. The key is kept in the
// queue file with the message (queue.Draft.KeepKey), for
// Options.IdempotencyWindow; 0 turns keys off and the header field is then
// passed through like any other.
//
// A key is the client's own: it is scoped to who gave it (Scope), so two
// applications choosing the same key never meet.

// MaxIdempotencyKey is the longest key accepted, in bytes.
const MaxIdempotencyKey = 255

// ParseIdempotencyKey checks a key as given in an Idempotency-Key header
// (HTTP or message header): 1 to 255 printable ASCII characters, space
// included, after surrounding white space is trimmed. A key in double
// quotes (the httpapi draft's sf-string form) is the key inside them, so
// "abc" and abc are one key.
func ParseIdempotencyKey(v string) (string, bool) {
	v = strings.Trim(v, " \t")
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if len(v) == 0 || len(v) > MaxIdempotencyKey {
		return "", false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "", false
		}
	}
	return v, true
}

// Idempotency is a key a protocol found outside the message (the HTTP
// Idempotency-Key header), or just the scope for a key in the message.
type Idempotency struct {
	// Scope names who gave the key ("key:NAME", "user:NAME", "ip:ADDR").
	Scope string
	// Key is the protocol's key; "" means the message's own
	// Idempotency-Key header field, if it has one.
	Key string
	// Fingerprint, if set, is called just before the commit: what tells a
	// repeat from a different request under the same Key (kept with it).
	Fingerprint func() []byte
	// Answer, if set, is called with the queue ID before the commit: the
	// reply a repeat is given (kept with the key).
	Answer func(id string) []byte
}

// Duplicate is Commit's (and Accept's) error when the key was used
// already within the window: nothing was queued, and ID, Fingerprint and
// Answer are the first submission's.
type Duplicate struct {
	Key         string
	ID          string
	Fingerprint []byte
	Answer      []byte
}

func (d *Duplicate) Error() string { return "idempotency key " + d.Key + " already used for " + d.ID }

// errBadIdempotencyKey refuses a message whose Idempotency-Key field is
// not a key: the client asked for a guarantee relayq cannot give it.
var errBadIdempotencyKey = &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "Idempotency-Key must be 1 to 255 printable ASCII characters"}

// IdempotencyScope is whose idempotency key it is: the credential
// ("user:name", "key:name"; a user's keys are the same over SMTP and
// HTTP), else (a trusted network) the client's address.
func IdempotencyScope(c Client) string {
	if c.Credential.Authenticated() {
		return c.Credential.String()
	}
	return "ip:" + c.IP.String()
}

// keyName is how a scoped key is stored: scope NUL key.
func keyName(scope, key string) string { return scope + "\x00" + key }

// IdempotencyWindow is how long keys are kept; 0 when they are off.
func (a Acceptor) IdempotencyWindow() time.Duration { return a.s.opts.IdempotencyWindow }

// Replay returns what the first submission with scope and key was
// answered, if it is kept and its window has not passed.
func (a Acceptor) Replay(scope, key string) (queue.Replay, bool, error) {
	return a.s.opts.Queue.Replay(keyName(scope, key))
}

// Hold marks scope and key as in flight until release is called; ok is
// false when another request holds them (the httpapi draft's 409).
func (a Acceptor) Hold(scope, key string) (release func(), ok bool) {
	return a.s.inflight.hold(keyName(scope, key))
}

// inflight is the set of keys whose first request is being processed.
type inflight struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

func (f *inflight) hold(k string) (func(), bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, busy := f.keys[k]; busy {
		return nil, false
	}
	if f.keys == nil {
		f.keys = map[string]struct{}{}
	}
	f.keys[k] = struct{}{}
	return func() {
		f.mu.Lock()
		delete(f.keys, k)
		f.mu.Unlock()
	}, true
}

// keepKey tells the draft which key to keep, if any: the protocol's, else
// the message header's. It refuses a header field that is not a key.
func (m *Incoming) keepKey() error {
	w := m.a.s.opts.IdempotencyWindow
	if w <= 0 {
		return nil
	}
	idem := m.t.Idem
	key, scope := "", IdempotencyScope(m.c)
	if idem != nil {
		key, scope = idem.Key, idem.Scope
	}
	var fp []byte
	if key != "" {
		if idem.Fingerprint != nil {
			fp = idem.Fingerprint()
		}
	} else if m.hs.idemSeen {
		k, ok := ParseIdempotencyKey(m.hs.idemKey)
		if !ok {
			return errBadIdempotencyKey
		}
		key = k
	} else {
		return nil
	}
	k := queue.IdempotencyKey{Key: keyName(scope, key), Window: w, Fingerprint: fp}
	if idem != nil && idem.Answer != nil {
		k.Answer = idem.Answer(m.d.ID())
	}
	m.key = key
	m.d.KeepKey(k)
	return nil
}

// duplicate turns the queue's DuplicateError into a Duplicate, logged.
func (m *Incoming) duplicate(err error) (*Duplicate, bool) {
	var de *queue.DuplicateError
	if !errors.As(err, &de) {
		return nil, false
	}
	logbuf.Info(m.a.s.log, "duplicate", "client", m.c.IP.String(), "idempotency_key", m.key, "queued_as", de.Replay.ID)
	return &Duplicate{Key: m.key, ID: de.Replay.ID, Fingerprint: de.Replay.Fingerprint, Answer: de.Replay.Answer}, true
}

// idempotencyField is the message header field that carries a key.
const idempotencyField = "idempotency-key"
