package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/queue"
)

// action is what the console can do to queued mail; the values are the
// admin API's bulk actions.
type action string

const (
	actRetry   action = "retry"
	actHold    action = "hold"
	actRelease action = "release"
	actDelete  action = "delete"
)

func (a action) valid() bool {
	return a == actRetry || a == actHold || a == actRelease || a == actDelete
}

// field is one hidden input the confirmation posts again.
type field struct{ Name, Value string }

// confirmData is the question every action asks once.
type confirmData struct {
	Post     string // the form's action URL
	Question string
	Fields   []field
	// Count and IDs are a bulk action's dry run: how many match, and the
	// first of them.
	Count int
	IDs   []string
	Bulk  bool
}

// confirmed reports whether the form is the answer to the question.
func confirmed(r *http.Request) bool { return r.PostFormValue("confirm") == "yes" }

// ask renders the confirmation for the posted form, keeping its fields.
func (c *Console) ask(w http.ResponseWriter, r *http.Request, se *session, d confirmData, keep ...string) {
	if d.Post == "" {
		d.Post = r.URL.Path
	}
	for _, k := range keep {
		for _, v := range r.PostForm[k] {
			d.Fields = append(d.Fields, field{k, v})
		}
	}
	c.render(w, r, se, http.StatusOK, "confirm", "Confirm", d)
}

// messageAction answers POST /ui/message/{id}/act: one message.
func (c *Console) messageAction(w http.ResponseWriter, r *http.Request, se *session) {
	id, a := r.PathValue("id"), action(r.PostFormValue("action"))
	if !a.valid() {
		c.refuse(w, r, se, http.StatusBadRequest, fmt.Sprintf("unknown action %q: want retry, hold, release or delete", a))
		return
	}
	cl := c.client(se.token)
	if !confirmed(r) {
		q := fmt.Sprintf("%s message %s?", capital(string(a)), id)
		if m, err := cl.Show(r.Context(), id); err == nil {
			q = fmt.Sprintf("%s message %s from %s to %d recipient(s)?", capital(string(a)), id, orNull(m.From), len(m.Recipients))
		}
		c.ask(w, r, se, confirmData{Question: q}, "action")
		return
	}
	var err error
	switch a {
	case actRetry:
		_, err = cl.Retry(r.Context(), id)
	case actHold:
		_, err = cl.Hold(r.Context(), id)
	case actRelease:
		_, err = cl.Release(r.Context(), id)
	case actDelete:
		err = cl.Delete(r.Context(), id)
	}
	if err != nil {
		c.fail(w, r, se, err)
		return
	}
	next := "/ui/message/" + url.PathEscape(id)
	if a == actDelete {
		next = "/ui/messages"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// filterFields are the bulk filter's form fields, as BulkFilter names them.
var filterFields = []string{"status", "domain", "from", "to", "older"}

// bulk answers POST /ui/bulk: an action on a selection (id fields) or on
// a filter. First a dry run, whose count the question shows; the answer
// acts on exactly the IDs counted when they were all listed.
func (c *Console) bulk(w http.ResponseWriter, r *http.Request, se *session) {
	a := action(r.PostFormValue("action"))
	if !a.valid() {
		c.refuse(w, r, se, http.StatusBadRequest, fmt.Sprintf("unknown action %q: want retry, hold, release or delete", a))
		return
	}
	f := admin.BulkFilter{Status: r.PostFormValue("status"), Domain: r.PostFormValue("domain"),
		From: r.PostFormValue("from"), To: r.PostFormValue("to"), Older: r.PostFormValue("older")}
	req := admin.BulkRequest{Action: string(a), Filter: f, IDs: r.PostForm["id"]}
	cl := c.client(se.token)
	if !confirmed(r) {
		req.DryRun = true
		res, err := cl.Bulk(r.Context(), req)
		if err != nil {
			c.fail(w, r, se, err)
			return
		}
		d := confirmData{Bulk: true, Count: res.Matched, IDs: res.IDs[:min(len(res.IDs), 20)],
			Question: fmt.Sprintf("%s %d message(s) matching %s?", capital(string(a)), res.Matched, describe(f, len(req.IDs)))}
		d.Fields = append(d.Fields, field{"action", string(a)})
		for _, k := range filterFields {
			if v := r.PostFormValue(k); v != "" {
				d.Fields = append(d.Fields, field{k, v})
			}
		}
		if !res.Truncated { // act on exactly what was counted
			for _, id := range res.IDs {
				d.Fields = append(d.Fields, field{"id", id})
			}
		}
		c.render(w, r, se, http.StatusOK, "confirm", "Confirm", d)
		return
	}
	if len(req.IDs) == 0 && f == (admin.BulkFilter{}) {
		c.refuse(w, r, se, http.StatusBadRequest, "Nothing selected: choose messages or a filter.")
		return
	}
	res, err := cl.Bulk(r.Context(), req)
	if err != nil {
		c.fail(w, r, se, err)
		return
	}
	c.render(w, r, se, http.StatusOK, "done", "Done", fmt.Sprintf("%s: %d message(s).", capital(string(a)), res.Matched))
}

// describe names a bulk target for the question.
func describe(f admin.BulkFilter, ids int) string {
	s := f.String()
	if s == "all" {
		s = "no filter"
	}
	if ids > 0 {
		s += fmt.Sprintf(", among the %d selected", ids)
	}
	return s
}

// flush answers POST /ui/flush: every waiting message due now.
func (c *Console) flush(w http.ResponseWriter, r *http.Request, se *session) {
	if !confirmed(r) {
		c.ask(w, r, se, confirmData{Question: "Make every waiting message due now (flush the queue)?"})
		return
	}
	n, err := c.client(se.token).Flush(r.Context())
	if err != nil {
		c.fail(w, r, se, err)
		return
	}
	c.render(w, r, se, http.StatusOK, "done", "Done", fmt.Sprintf("Flushed: %d message(s) due now.", n))
}

// resume answers POST /ui/resume: end a suspension or throttle.
func (c *Console) resume(w http.ResponseWriter, r *http.Request, se *session) {
	scope := r.PostFormValue("scope")
	if !confirmed(r) {
		c.ask(w, r, se, confirmData{Question: fmt.Sprintf("Resume %s now (end its suspension or throttle)?", scope)}, "scope")
		return
	}
	if err := c.client(se.token).Resume(r.Context(), scope); err != nil {
		c.fail(w, r, se, err)
		return
	}
	http.Redirect(w, r, "/ui/destinations", http.StatusSeeOther)
}

// suppressionAction answers POST /ui/suppressions: op add or remove.
func (c *Console) suppressionAction(w http.ResponseWriter, r *http.Request, se *session) {
	op, addr := r.PostFormValue("op"), strings.TrimSpace(r.PostFormValue("address"))
	if (op != "add" && op != "remove") || addr == "" {
		c.refuse(w, r, se, http.StatusBadRequest, "Want op add or remove and an address.")
		return
	}
	if !confirmed(r) {
		q := fmt.Sprintf("Stop sending to %s (add it to the suppression list)?", addr)
		if op == "remove" {
			q = fmt.Sprintf("Send to %s again (remove it from the suppression list)?", addr)
		}
		c.ask(w, r, se, confirmData{Question: q}, "op", "address", "reply")
		return
	}
	if err := c.suppress(r.Context(), se, op, addr, r.PostFormValue("reply")); err != nil {
		c.fail(w, r, se, err)
		return
	}
	http.Redirect(w, r, "/ui/suppressions", http.StatusSeeOther)
}

func (c *Console) suppress(ctx context.Context, se *session, op, addr, reply string) error {
	cl := c.client(se.token)
	if op == "remove" {
		return cl.Unsuppress(ctx, addr)
	}
	return cl.Suppress(ctx, []suppression.Entry{{Address: addr, Reply: reply, Source: queue.SourceAPI}})
}

// capital upper-cases the first letter of an ASCII word.
func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// orNull shows the null sender as <>.
func orNull(s string) string {
	if s == "" {
		return "<>"
	}
	return s
}
