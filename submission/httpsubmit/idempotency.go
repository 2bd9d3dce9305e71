package httpsubmit

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"net/http"

	"github.com/relayq/relayq/submission"
)

// Idempotency-Key (the IETF httpapi idempotency-key draft, as Stripe,
// Resend and Brevo use it): a repeat of a request that was answered 202
// is answered the same 202, byte for byte, with Idempotent-Replayed:
// true, and queues nothing. The same key with a different request is 422,
// and a repeat while the first is still being processed is 409. Only a
// 202 keeps its key: a refused request may be corrected and sent again
// under the same key.

// keyed is one request's idempotency state; nil when keys are off.
type keyed struct {
	scope   string
	key     string // the header's key, or "" (then a message header may give one)
	sum     hash.Hash
	body    io.ReadCloser // the request body, read through sum
	release func()
	// answer is how this API answers: the status of a first answer (a
	// replay's too) and how it writes an error.
	answer answerer
}

// answerer is how an API answers idempotency: relayq's own 202 and
// {"error","code"}, or a hosted API's shapes (esp.go).
type answerer struct {
	ok   int
	fail func(w http.ResponseWriter, status int, e apiError)
}

var ownAnswers = answerer{ok: http.StatusAccepted, fail: writeError}

func (k *keyed) Read(p []byte) (int, error) {
	n, err := k.body.Read(p)
	k.sum.Write(p[:n])
	return n, err
}

func (k *keyed) Close() error { return k.body.Close() }

// begin reads the request's key. It answers the request itself (done)
// for a malformed key, a key in flight (409) and a repeat (the first
// answer, or 422); otherwise k, if not nil, must be ended.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, c submission.Client) (k *keyed, done bool) {
	return s.beginAs(w, r, submission.IdempotencyScope(c), ownAnswers)
}

// beginAs is begin for a key kept under scope, answered as a says.
func (s *Server) beginAs(w http.ResponseWriter, r *http.Request, scope string, a answerer) (k *keyed, done bool) {
	if s.acc.IdempotencyWindow() <= 0 {
		return nil, false
	}
	k = &keyed{scope: scope, answer: a}
	writeError := a.fail
	vals := r.Header.Values("Idempotency-Key")
	if len(vals) == 0 {
		return k, false
	}
	key, ok := submission.ParseIdempotencyKey(vals[0])
	if len(vals) > 1 || !ok {
		writeError(w, http.StatusBadRequest, apiError{Error: "Idempotency-Key must be one value of 1 to 255 printable ASCII characters", Code: "5.5.4"})
		return nil, true
	}
	k.key = key
	if k.release, ok = s.acc.Hold(k.scope, key); !ok {
		writeError(w, http.StatusConflict, apiError{Error: "a request with Idempotency-Key " + quote(key) + " is still in progress", Code: "4.5.0"})
		return nil, true
	}
	k.sum = sha256.New()
	// What a repeat must match: the body and how to read it.
	k.sum.Write([]byte(r.Header.Get("Content-Type") + "\x00" + r.URL.RawQuery + "\x00"))
	k.body, r.Body = r.Body, k
	rep, found, err := s.acc.Replay(k.scope, key)
	if err != nil {
		k.end()
		s.log.Error("idempotency key lookup failed", "err", err)
		writeError(w, http.StatusServiceUnavailable, apiError{Error: "queue unavailable, try again later", Code: "4.3.0"})
		return nil, true
	}
	if found {
		k.replay(w, &submission.Duplicate{Key: key, ID: rep.ID, Fingerprint: rep.Fingerprint, Answer: rep.Answer}, s.acc.MaxMessageBytes())
		k.end()
		return nil, true
	}
	return k, false
}

// end releases the key; k may be nil.
func (k *keyed) end() {
	if k != nil && k.release != nil {
		k.release()
		k.release = nil
	}
}

// transaction is what the Acceptor needs to keep the key with the
// message; answer is the 202 body for a queue ID.
func (k *keyed) transaction(limit int64, answer func(id string) []byte) *submission.Idempotency {
	if k == nil {
		return nil
	}
	t := &submission.Idempotency{Scope: k.scope, Key: k.key, Answer: answer}
	if k.key != "" {
		t.Fingerprint = func() []byte { return k.fingerprint(limit) }
	}
	return t
}

// fingerprint is the hash of the request, its body read to the end (a
// JSON decoder may stop before trailing white space).
func (k *keyed) fingerprint(limit int64) []byte {
	_, _ = io.Copy(io.Discard, io.LimitReader(k, 2*limit+64<<10))
	return k.sum.Sum(nil)
}

// replay answers a repeat: the first answer if the request is the same
// (or the key came in the message, which has no fingerprint), else 422.
func (k *keyed) replay(w http.ResponseWriter, d *submission.Duplicate, limit int64) {
	if k.key != "" && !bytes.Equal(k.fingerprint(limit), d.Fingerprint) {
		k.answer.fail(w, http.StatusUnprocessableEntity, apiError{Error: "Idempotency-Key " + quote(d.Key) + " was used for a different request", Code: "5.5.4"})
		return
	}
	ans := d.Answer
	if len(ans) == 0 {
		// Kept by SMTP under the same scope: no HTTP answer to replay.
		ans = encodeJSON(accepted{QueueID: d.ID, Recipients: []recipientResult{}})
	}
	w.Header().Set("Idempotent-Replayed", "true")
	writeEncoded(w, k.answer.ok, ans)
}

// replayed answers a Duplicate the Acceptor found at the commit (a key in
// the message header, or a race with another path); false for any other
// error.
func (k *keyed) replayed(w http.ResponseWriter, err error, limit int64) bool {
	var d *submission.Duplicate
	if k == nil || !errors.As(err, &d) {
		return false
	}
	k.replay(w, d, limit)
	return true
}

func quote(key string) string { return `"` + key + `"` }

// encodeJSON is writeJSON's encoding, for an answer kept to be replayed.
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return b.Bytes()
}

func writeEncoded(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
