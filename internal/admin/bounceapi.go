package admin

// POST /api/v1/queue/bounce: an operator's bounce of every waiting
// recipient at one domain, now (relayq queue bounce --domain D, like
// KumoMTA's kcli bounce). The queue does it in one transaction and leaves
// recipients an attempt is in flight for (queue.Admin.Bounce); this waits,
// up to the request's bound, for those attempts to end and bounces what
// they left waiting, so an attempt in flight never ends both delivered and
// bounced. The reports are the engine's (Reporter).

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/relayq/relayq/internal/jsonkeys"
	"github.com/relayq/relayq/queue"
)

// Reporter is a Kicker that also queues the reports a bounce marked, one
// per message, as for the relay's own bounces (*delivery.Engine's
// ReportOwed). Without one they are queued at the relay's next start.
type Reporter interface {
	ReportOwed(ids ...string)
}

// BounceRequest is the body of POST /api/v1/queue/bounce.
type BounceRequest struct {
	Domain string `json:"domain"`
	// Reason, one line, follows "5.0.0 bounced by operator: " in the
	// recipients' reply, events and reports.
	Reason string `json:"reason,omitempty"`
	// Wait bounds the wait for recipients in flight (a Go duration,
	// default 10s, at most 20s; "0s": none).
	Wait   string `json:"wait,omitempty"`
	DryRun bool   `json:"dry_run,omitempty"`
}

// BounceResult answers a bounce: the messages and recipients bounced (with
// dry_run, that would be now), and the recipients left because an attempt
// was still in flight for them after the wait (with dry_run, now).
type BounceResult struct {
	Domain     string   `json:"domain"`
	DryRun     bool     `json:"dry_run"`
	Messages   int      `json:"messages"`
	Recipients int      `json:"recipients"`
	InFlight   int      `json:"in_flight"`
	IDs        []string `json:"ids"` // the first 1000 of Messages
}

// operatorBounce is what a bounced recipient's reply says (RFC 3463 5.0.0:
// permanent, no more detail); a reason follows it.
const operatorBounce = "5.0.0 bounced by operator"

// Bounds of a bounce request.
const (
	defaultBounceWait = 10 * time.Second
	// maxBounceWait keeps the answer inside the CLI's request timeout.
	maxBounceWait   = 20 * time.Second
	maxBounceReason = 200
	maxDomain       = 253
)

// bounceOf validates req and turns it into the queue's request and the wait.
func bounceOf(req BounceRequest) (queue.BounceRequest, time.Duration, error) {
	d := req.Domain
	if d == "" || len(d) > maxDomain || strings.ContainsAny(d, "@/* ") || strings.IndexFunc(d, notPrintable) >= 0 {
		return queue.BounceRequest{}, 0, fmt.Errorf("bad domain %q: want a domain such as example.net", d)
	}
	reply := operatorBounce
	if req.Reason != "" {
		if len(req.Reason) > maxBounceReason || strings.IndexFunc(req.Reason, notPrintable) >= 0 {
			return queue.BounceRequest{}, 0, fmt.Errorf("bad reason: want one line of at most %d bytes", maxBounceReason)
		}
		reply += ": " + req.Reason
	}
	wait := defaultBounceWait
	if req.Wait != "" {
		w, err := time.ParseDuration(req.Wait)
		if err != nil || w < 0 || w > maxBounceWait {
			return queue.BounceRequest{}, 0, fmt.Errorf("bad wait %q: want a duration from 0s to %v", req.Wait, maxBounceWait)
		}
		wait = w
	}
	return queue.BounceRequest{Domain: d, Reply: reply, DryRun: req.DryRun}, wait, nil
}

func notPrintable(r rune) bool { return !unicode.IsPrint(r) }

// bounce answers POST /api/v1/queue/bounce.
func (h *handler) bounce(w http.ResponseWriter, r *http.Request) {
	st := h.store(w)
	if st == nil {
		return
	}
	var req BounceRequest
	if err := jsonkeys.Decode(io.LimitReader(r.Body, 64<<10), &req, true); err != nil {
		writeError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return
	}
	q, wait, err := bounceOf(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	res, err := st.Admin().Bounce(q)
	if err != nil {
		h.fail(w, "bounce", "", err)
		return
	}
	if !q.DryRun {
		h.bounced(r, q, res)
		if len(res.InFlight) > 0 && wait > 0 {
			h.awaitAttempts(r.Context(), st, res.InFlight, wait)
			q.Only = res.InFlight
			more, err := st.Admin().Bounce(q)
			if err != nil {
				h.fail(w, "bounce", "", err)
				return
			}
			h.bounced(r, q, more)
			res = merge(res, more)
		}
	}
	out := BounceResult{Domain: q.Domain, DryRun: q.DryRun, Messages: len(res.IDs), Recipients: res.Recipients,
		InFlight: len(res.InFlight), IDs: res.IDs}
	if out.IDs == nil {
		out.IDs = []string{}
	}
	out.IDs = out.IDs[:min(len(out.IDs), maxBulkIDs)]
	writeJSON(w, http.StatusOK, out)
}

// bounced logs each message a bounce changed and has its reports queued.
func (h *handler) bounced(r *http.Request, q queue.BounceRequest, res queue.BounceResult) {
	if len(res.IDs) == 0 {
		return
	}
	for _, id := range res.IDs {
		h.logAction(r, "bounce", id, "domain="+q.Domain)
	}
	if rp, ok := h.o.Kicker.(Reporter); ok {
		rp.ReportOwed(res.IDs...)
	}
	h.kick() // the engine's copies of these messages are out of date
}

// awaitAttempts returns once no attempt of flying is in flight, wait has
// passed on the handler's clock, or ctx ends.
func (h *handler) awaitAttempts(ctx context.Context, st *queue.Store, flying []queue.Attempt, wait time.Duration) {
	t := h.o.Clock.NewTimer(wait)
	defer t.Stop()
	for {
		ended := st.AttemptsEnded()
		if st.InFlight(flying) == 0 {
			return
		}
		select {
		case <-ended:
		case <-t.C():
			return
		case <-ctx.Done():
			return
		}
	}
}

// merge adds a later pass's result to the first one's.
func merge(a, b queue.BounceResult) queue.BounceResult {
	ids := append(slices.Clone(a.IDs), b.IDs...)
	slices.Sort(ids)
	return queue.BounceResult{IDs: slices.Compact(ids), Recipients: a.Recipients + b.Recipients, InFlight: b.InFlight}
}

// Bounce sends POST /api/v1/queue/bounce.
func (c *Client) Bounce(ctx context.Context, req BounceRequest) (*BounceResult, error) {
	var res BounceResult
	if err := c.postJSON(ctx, "/api/v1/queue/bounce", req, &res, "bounce "+req.Domain); err != nil {
		return nil, err
	}
	return &res, nil
}
