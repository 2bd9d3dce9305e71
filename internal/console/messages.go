package console

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/queue"
)

// pageSize is the messages shown per page; the API pages through the
// queue's index, so a page costs the same at any queue size.
const pageSize = 50

// search is the message search form, also the bulk filter.
type search struct {
	ID, From, To, Domain, Status, MessageID, Since, After string
}

func searchOf(v url.Values) search {
	g := func(k string) string { return strings.TrimSpace(v.Get(k)) }
	return search{ID: g("id"), From: g("from"), To: g("to"), Domain: g("domain"), Status: g("status"),
		MessageID: g("message_id"), Since: g("since"), After: g("after")}
}

// messagesData is the messages page.
type messagesData struct {
	S        search
	Queued   []admin.Message
	Next     string
	Finished []queue.Finished
	// HistoryNote says why finished mail is not listed ("" when it is).
	HistoryNote string
}

// messages answers GET /ui/messages: queued mail by sender, recipient,
// domain and status (paged), and finished mail from the history by
// sender, recipient, Message-ID and time. A queue ID opens its timeline.
func (c *Console) messages(w http.ResponseWriter, r *http.Request, se *session) {
	s := searchOf(r.URL.Query())
	if s.ID != "" {
		http.Redirect(w, r, "/ui/message/"+url.PathEscape(s.ID), http.StatusSeeOther)
		return
	}
	cl := c.client(se.token)
	d := messagesData{S: s}
	if s.MessageID == "" {
		p, err := cl.List(r.Context(), admin.ListQuery{Status: s.Status, Domain: s.Domain, From: s.From, To: s.To, Limit: pageSize, After: s.After})
		if err != nil {
			c.fail(w, r, se, err)
			return
		}
		d.Queued, d.Next = p.Messages, p.Next
	}
	if s.From != "" || s.To != "" || s.MessageID != "" || s.Since != "" {
		h, err := cl.History(r.Context(), admin.HistoryQuery{Sender: s.From, Recipient: s.To, MessageID: s.MessageID, Since: s.Since, Limit: pageSize})
		if err == nil {
			d.Finished = h.Messages
		} else {
			d.HistoryNote = err.Error()
		}
	}
	c.render(w, r, se, http.StatusOK, "messages", "Messages", d)
}

// messageData is one message's page.
type messageData struct {
	ID  string
	Msg *admin.Message // from the history once it left the queue
	// Finished is when it left the queue, zero while it waits.
	Finished time.Time
	Timeline timeline
	Headers  string // write role only: raw headers are the message's
	Note     string
}

// message answers GET /ui/message/{id}: the envelope, the recipients'
// states and the timeline of its events.
func (c *Console) message(w http.ResponseWriter, r *http.Request, se *session) {
	id := r.PathValue("id")
	cl := c.client(se.token)
	d := messageData{ID: id}
	m, err := cl.Show(r.Context(), id)
	var ae *admin.APIError
	switch {
	case err == nil:
		d.Msg = m
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
		d.Note = "This message is no longer in the queue (delivered, bounced or deleted); its events follow."
		if p, err := cl.History(r.Context(), admin.HistoryQuery{QueueID: id, Limit: 1}); err == nil && len(p.Messages) == 1 {
			f := p.Messages[0]
			m := admin.MessageOf(&f.Envelope)
			d.Msg, d.Finished = &m, f.Finished
			d.Note = ""
		}
	default:
		c.fail(w, r, se, err)
		return
	}
	// Both roles read the timeline (events are metadata); the header
	// block is the stored message's, which only the write role reads.
	if se.role == roleWrite && d.Msg != nil && d.Finished.IsZero() {
		d.Headers = c.headers(r, se, id)
	}
	d.Timeline = c.timelineOf(r, cl, id, d.Msg)
	if d.Msg == nil && len(d.Timeline.Events) == 0 {
		c.refuse(w, r, se, http.StatusNotFound, "No message "+id+" in the queue or its events.")
		return
	}
	c.render(w, r, se, http.StatusOK, "message", "Message "+id, d)
}

// maxHeaderBytes bounds the header block shown on the page.
const maxHeaderBytes = 64 << 10

// headers returns the stored message's header block (the write role
// only: the API refuses the raw message to the read token).
func (c *Console) headers(r *http.Request, se *session, id string) string {
	body, err := c.client(se.token).Raw(r.Context(), id)
	if err != nil {
		return "(headers unavailable: " + err.Error() + ")"
	}
	defer body.Close()
	var b bytes.Buffer
	br := bufio.NewReader(io.LimitReader(body, maxHeaderBytes))
	for {
		line, err := br.ReadString('\n')
		if strings.TrimRight(line, "\r\n") == "" {
			break
		}
		b.WriteString(strings.TrimRight(line, "\r\n") + "\n")
		if err != nil {
			break
		}
	}
	return b.String()
}

// raw answers GET /ui/message/{id}/raw: the stored message as plain
// text (never HTML: the browser shows the bytes, and nosniff holds it).
func (c *Console) raw(w http.ResponseWriter, r *http.Request, se *session) {
	id := r.PathValue("id")
	body, err := c.client(se.token).Raw(r.Context(), id)
	if err != nil {
		c.fail(w, r, se, err)
		return
	}
	defer body.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", `inline; filename="`+url.PathEscape(id)+`.eml"`)
	_, _ = io.Copy(w, body)
}

// StatusChoices are the statuses the queue list can be narrowed to.
func (messagesData) StatusChoices() []string {
	return []string{"queued", "deferred", "scheduled", "held"}
}

// Actions are the buttons of a queued message.
func (messageData) Actions() []action { return []action{actRetry, actHold, actRelease, actDelete} }
