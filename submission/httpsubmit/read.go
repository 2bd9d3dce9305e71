package httpsubmit

import (
	"net/http"
	"strconv"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

// Reads: a credential sees its own tenant's messages and events only;
// another tenant's message is 404 as an unknown one is (the admin API,
// with the admin token, sees all).

// messageView is GET /api/v1/messages/{id}.
type messageView struct {
	QueueID    string          `json:"queue_id"`
	MessageID  string          `json:"message_id,omitempty"`
	From       string          `json:"from"`
	Tenant     string          `json:"tenant,omitempty"`
	Stream     string          `json:"stream,omitempty"`
	Recipients []recipientView `json:"recipients"`
}

type recipientView struct {
	Address string `json:"address"`
	Status  string `json:"status"`
	Reply   string `json:"reply,omitempty"`
}

// eventPage is GET /api/v1/events.
type eventPage struct {
	Events []queue.Event `json:"events"`
	Next   string        `json:"next"`
}

// reader authenticates a read: a credential is required.
func (s *Server) reader(w http.ResponseWriter, r *http.Request) (submission.Client, bool) {
	c, e := s.authenticate(r, remoteIP(r))
	if e == nil && !c.Credential.Authenticated() {
		e = submission.ErrAuthRequired
	}
	if e != nil {
		writeRefusal(w, e)
		return c, false
	}
	return c, true
}

func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	c, ok := s.reader(w, r)
	if !ok {
		return
	}
	env, found, err := s.acc.Message(c, r.PathValue("id"))
	switch {
	case err != nil:
		s.log.Error("reading a message failed", "id", r.PathValue("id"), "err", err)
		writeRefusal(w, errReadFailed)
		return
	case !found:
		writeError(w, http.StatusNotFound, apiError{Error: "no such message", Code: "5.1.0"})
		return
	}
	v := messageView{QueueID: env.ID, MessageID: env.MessageID, From: env.From, Tenant: env.Sender.Tenant, Stream: env.Sender.Stream,
		Recipients: []recipientView{}}
	for _, rc := range env.Recipients {
		v.Recipients = append(v.Recipients, recipientView{Address: rc.Address, Status: string(rc.Status), Reply: rc.LastReply})
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	c, ok := s.reader(w, r)
	if !ok {
		return
	}
	q := queue.EventQuery{After: r.URL.Query().Get("after"), Limit: 100}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, apiError{Error: "limit: a whole number from 1 to 1000", Code: "5.5.4"})
			return
		}
		q.Limit = n
	}
	if _, ok := queue.EventKey(q.After); q.After != "" && !ok {
		writeError(w, http.StatusBadRequest, apiError{Error: "after: not an event ID", Code: "5.5.4"})
		return
	}
	evs, next, err := s.acc.Events(c, q)
	if err != nil {
		s.log.Error("reading events failed", "err", err)
		writeRefusal(w, errReadFailed)
		return
	}
	if evs == nil {
		evs = []queue.Event{}
	}
	writeJSON(w, http.StatusOK, eventPage{Events: evs, Next: next})
}

var errReadFailed = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Reading the queue failed"}
