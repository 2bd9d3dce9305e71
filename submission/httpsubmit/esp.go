package httpsubmit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/relayq/relayq/internal/esp"
	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

// A hosted API (Postmark, Resend, ...) mounted on the listener: its
// requests are translated by internal/esp's packages to esp.Message,
// built into MIME by the builder relayq's own JSON API uses, and handed
// to the same Acceptor calls (relay policy, limits, DKIM, idempotency,
// send_at, fsync before the answer). Only the shapes of the request and
// of the answers are the provider's.
type hostedAPI interface {
	// name scopes idempotency keys, so that two APIs never replay each
	// other's answers.
	name() string
	// credential is the API key the request carries, "" for none.
	credential(r *http.Request) string
	// parse translates the body of a request to path: the messages, and
	// for a batch that answers item by item, an error per item.
	parse(path string, data []byte) (msgs []esp.Message, itemErrs []error, err error)
	// fail writes an error answer; e.Error is the text, e.Code the
	// enhanced code of an SMTP-style refusal (or "" for a translator's
	// error, then in cause).
	fail(w http.ResponseWriter, status int, e apiError, cause error)
	// batch tells whether path takes a batch (an array of messages).
	batch(path string) bool
	// answer is the answer to a request whose messages were all tried,
	// one outcome per message in order: its status and body, and any
	// header fields it sets in h.
	answer(h http.Header, path string, out []outcome) (int, []byte)
}

// outcome is one message of a request: queued as ID, or refused.
type outcome struct {
	msg *esp.Message
	id  string
	at  time.Time
	err error // *esp.Error, *smtp.SMTPError, or nil when queued
}

// mountESP serves api under paths.
func (s *Server) mountESP(mux *http.ServeMux, api hostedAPI, paths ...string) {
	for _, p := range paths {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { s.handleESP(w, r, api) })
	}
}

func (s *Server) handleESP(w http.ResponseWriter, r *http.Request, api hostedAPI) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		api.fail(w, http.StatusMethodNotAllowed, apiError{Error: "use POST", Code: "5.5.1"}, nil)
		return
	}
	if s.closing.Load() {
		w.Header().Set("Connection", "close")
		api.fail(w, statusFor(errShuttingDown), apiError{Error: errShuttingDown.Message, Code: enhanced(errShuttingDown)}, nil)
		return
	}
	signed, isSigned := api.(signedAPI)
	var c submission.Client
	if isSigned {
		c = clientOf(r) // known once the body is read and its signature checked
	} else {
		var e *smtp.SMTPError
		if c, e = s.authenticateESP(r, api); e != nil {
			api.fail(w, statusFor(e), apiError{Error: e.Message, Code: enhanced(e)}, nil)
			return
		}
	}
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
		api.fail(w, http.StatusUnsupportedMediaType, apiError{Error: "Content-Type must be application/json", Code: "5.6.0"}, nil)
		return
	}
	if e := checkQuery(r, nil); e != nil {
		api.fail(w, http.StatusBadRequest, apiError{Error: e.Message, Code: enhanced(e)}, nil)
		return
	}
	ans := answerer{ok: http.StatusOK, fail: func(w http.ResponseWriter, status int, e apiError) { api.fail(w, status, e, nil) }}
	var k *keyed
	if !isSigned { // a signed API has no Idempotency-Key
		var done bool
		if k, done = s.beginAs(w, r, api.name()+":"+submission.IdempotencyScope(c), ans); done {
			return
		}
		defer k.end()
	}
	limit := s.acc.MaxMessageBytes()
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 2*limit+64<<10))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.acc.Refuse(c, submission.RejectSize, submission.ErrTooBig)
			api.fail(w, http.StatusRequestEntityTooLarge, apiError{}, &esp.Error{Kind: esp.TooLarge, Detail: fmt.Sprintf("the body is over %d bytes", 2*limit+64<<10)})
			return
		}
		api.fail(w, http.StatusBadRequest, apiError{Error: "request body could not be read", Code: "4.4.2"}, nil)
		return
	}
	if isSigned {
		name, err := signed.verify(r, data, s.clock.Now())
		if err != nil {
			s.acc.Refuse(c, submission.RejectAuth, errBadSignature)
			api.fail(w, 0, apiError{}, err)
			return
		}
		c.Credential = identity.Credential{Kind: identity.APIKey, Name: name}
	}
	msgs, itemErrs, err := api.parse(r.URL.Path, data)
	if err != nil {
		s.acc.Refuse(c, submission.RejectSyntax, malformed("%v", err))
		api.fail(w, 0, apiError{}, err)
		return
	}
	out := s.queueAll(w, r, c, api, msgs, itemErrs, k)
	if out == nil {
		return // answered already: a repeat
	}
	status, body := api.answer(w.Header(), r.URL.Path, out)
	writeEncoded(w, status, body)
}

// authenticateESP checks the API's credential as an API key of relayq's
// (submission.api_keys): a hosted API always takes a key, whatever the
// client's address.
func (s *Server) authenticateESP(r *http.Request, api hostedAPI) (submission.Client, *smtp.SMTPError) {
	c := clientOf(r)
	ip := c.IP
	key := api.credential(r)
	if key == "" {
		return c, s.acc.Refuse(c, submission.RejectAuth, submission.ErrAuthRequired)
	}
	if !c.TLS && !s.acc.AllowInsecureAuth() {
		return c, s.acc.Refuse(c, submission.RejectAuth, errNeedTLS)
	}
	name, err := s.acc.LoginKey(ip, key)
	if err != nil {
		return c, asSMTP(err)
	}
	c.Credential = identity.Credential{Kind: identity.APIKey, Name: name}
	return c, nil
}

// queueAll builds and queues each message in turn; nil when it answered
// the request itself (a repeated key with a different body).
func (s *Server) queueAll(w http.ResponseWriter, r *http.Request, c submission.Client, api hostedAPI, msgs []esp.Message, itemErrs []error, k *keyed) []outcome {
	batch := api.batch(r.URL.Path)
	out := make([]outcome, len(msgs))
	for i := range msgs {
		out[i].msg = &msgs[i]
		if itemErrs != nil && itemErrs[i] != nil {
			out[i].err = itemErrs[i]
			continue
		}
		var idem *submission.Idempotency
		if k != nil {
			// A single message keeps its whole answer (begin replays
			// it); each message of a batch its ID, under a key of its
			// own, and the batch's answer is put together again.
			m := &msgs[i]
			idem = &submission.Idempotency{Scope: k.scope, Answer: func(id string) []byte {
				if batch {
					return []byte(id)
				}
				_, b := api.answer(http.Header{}, r.URL.Path, []outcome{{msg: m, id: id, at: s.clock.Now()}})
				return b
			}}
			if k.key != "" {
				idem.Key = k.key
				if batch {
					idem.Key += "#" + strconv.Itoa(i)
				}
				idem.Fingerprint = func() []byte { return k.fingerprint(s.acc.MaxMessageBytes()) }
			}
		}
		env, err := s.queueOne(r, c, &msgs[i], idem)
		var d *submission.Duplicate
		if errors.As(err, &d) {
			if k.key != "" && !bytes.Equal(k.fingerprint(s.acc.MaxMessageBytes()), d.Fingerprint) {
				k.answer.fail(w, http.StatusUnprocessableEntity, apiError{Error: "Idempotency-Key " + quote(k.key) + " was used for a different request", Code: "5.5.4"})
				return nil
			}
			w.Header().Set("Idempotent-Replayed", "true")
			if !batch {
				writeEncoded(w, k.answer.ok, d.Answer)
				return nil
			}
			out[i].id, err = string(d.Answer), nil
		}
		out[i].err = err
		if err == nil && out[i].id == "" {
			out[i].id, out[i].at = env.ID, env.Created
		}
	}
	return out
}

// queueOne builds m and queues it as relayq's own JSON API does (submit):
// the sender and the hold checked, each recipient checked (a refused one
// is left out; all refused refuses the message with the first reply),
// then Accept, which answers only after the fsync.
func (s *Server) queueOne(r *http.Request, c submission.Client, m *esp.Message, idem *submission.Idempotency) (env queue.Envelope, err error) {
	var buf bytes.Buffer
	var sub *submitted
	if m.Raw != nil {
		sub, err = s.rawMessage(m)
	} else if sub, err = buildMessage(&buf, m, s.clock.Now(), s.acc.Hostname()); err == nil {
		sub.body = &buf
	}
	if err != nil {
		return env, malformed("%v", err)
	}
	if err := s.acc.CheckSender(c, sub.from); err != nil {
		return env, err
	}
	hold := submission.Hold{Until: m.SendAt}
	if err := s.acc.CheckHold(c, hold); err != nil {
		return env, err
	}
	t := submission.Transaction{From: sub.from, Hold: hold, Idem: idem, UTF8: !isASCII(sub.from)}
	var first error
	for _, to := range sub.to {
		if err := s.acc.CheckRecipientFrom(c, t.From, to, len(t.Recipients)); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		t.Recipients = append(t.Recipients, queueRecipient(to))
		t.UTF8 = t.UTF8 || !isASCII(to)
	}
	if len(t.Recipients) == 0 {
		return env, first
	}
	return s.acc.Accept(r.Context(), c, t, sub.body)
}

// clientOf is the request's client before any credential.
func clientOf(r *http.Request) submission.Client {
	c := submission.Client{IP: remoteIP(r), TLS: r.TLS != nil, With: "HTTP"}
	if c.TLS {
		c.With = "HTTPS"
	}
	return c
}

// errBadSignature is how a refused request signature is counted.
var errBadSignature = &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "Request signature refused"}
