package drain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtpcodes"
)

// run is one drain from Start to its end.
type run struct {
	d      *Drainer
	req    Request
	dialer *smtpclient.Dialer
	hop    smtpclient.Hop

	mu      sync.Mutex
	peerErr error // the peer went away: the run ends
}

// listPage is how many envelopes one scan of the queue reads at a time.
const listPage = 500

// run pauses delivery, makes everything due, then hands messages over in
// passes over the queue (in ID order) until a pass finds nothing new: the
// bounces the drain itself writes come after the pass that caused them.
func (r *run) run(ctx context.Context) error {
	o := r.d.o
	defer r.dialer.Close()
	if err := o.Engine.Pause(ctx); err != nil {
		return fmt.Errorf("drain: pausing delivery: %w", err)
	}
	if _, err := o.Store.Admin().Flush(o.Clock.Now()); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	tried := map[string]bool{}
	for {
		n, err := r.pass(ctx, tried)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// pass hands over every message not tried yet, Sessions at a time, and
// says how many it tried.
func (r *run) pass(ctx context.Context, tried map[string]bool) (int, error) {
	ids := make(chan string)
	var wg sync.WaitGroup
	for range r.d.o.Sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				r.handOver(ctx, id)
			}
		}()
	}
	n, err := r.feed(ctx, tried, ids)
	close(ids)
	wg.Wait()
	if err == nil {
		err = r.stopped(ctx)
	}
	return n, err
}

// feed sends the IDs of messages not held and not tried yet to ids.
func (r *run) feed(ctx context.Context, tried map[string]bool, ids chan<- string) (int, error) {
	n := 0
	after := ""
	for {
		page, next, err := r.d.o.Store.Admin().List(queue.ListOptions{Limit: listPage, After: after})
		if err != nil {
			return n, fmt.Errorf("drain: reading the queue: %w", err)
		}
		for _, env := range page {
			if env.Held || tried[env.ID] {
				continue
			}
			if err := r.stopped(ctx); err != nil {
				return n, err
			}
			tried[env.ID] = true
			n++
			select {
			case ids <- env.ID:
			case <-ctx.Done():
				return n, r.stopped(ctx)
			}
		}
		if next == "" {
			return n, nil
		}
		after = next
	}
}

// stopped says why the run must end: Stop, or the peer went away.
func (r *run) stopped(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.peerErr != nil {
		return r.peerErr
	}
	if ctx.Err() != nil {
		return errors.New("drain: stopped by the operator")
	}
	return nil
}

// handOver sends one message to the peer: claim, send, record.
func (r *run) handOver(ctx context.Context, id string) {
	o := r.d.o
	if r.stopped(ctx) != nil {
		return
	}
	env, err := o.Store.Get(id)
	if err != nil {
		return // delivered, deleted or quarantined meanwhile
	}
	var addrs []string
	for _, rc := range env.Recipients {
		if !rc.Status.Final() {
			addrs = append(addrs, rc.Address)
		}
	}
	start := o.Clock.Now()
	// Record before send: from here a crash leaves the message due again
	// at start+ClaimFor, never lost.
	claimed, err := o.Store.Claim(id, addrs, start, start.Add(o.ClaimFor))
	if err != nil || len(claimed.Addrs) == 0 {
		if err != nil && !errors.Is(err, queue.ErrHeld) && !errors.Is(err, queue.ErrNotFound) {
			o.Logger.Error("drain: claim failed; the message stays here", "id", id, "err", err)
		}
		return
	}
	env = claimed.Envelope
	var rcpts []queue.Recipient
	denv := smtpclient.Envelope{From: env.From, RET: env.RET, EnvID: env.EnvID, SMTPUTF8: env.SMTPUTF8, Body: env.Body, Size: env.Size}
	for _, rc := range env.Recipients {
		if contains(claimed.Addrs, rc.Address) && !rc.Status.Final() {
			rcpts = append(rcpts, rc)
			denv.Recipients = append(denv.Recipients, smtpclient.RcptReq{Address: rc.Address, ORCPT: rc.ORCPT, Notify: rc.Notify})
		}
	}
	body := func() (io.ReadCloser, error) { return o.Store.BodyOf(env), nil }
	results := r.dialer.Deliver(ctx, []smtpclient.Hop{r.hop}, denv, body)
	if ctx.Err() != nil {
		// Stopped mid-send: what the peer took is recorded (no duplicate
		// for it); the rest keeps its claim, as at shutdown, rather than
		// count a failure the stop caused.
		rcpts, results = accepted(rcpts, results)
		if len(rcpts) == 0 {
			return
		}
	}
	r.record(env, rcpts, results)
}

// accepted keeps the recipients the peer answered with success.
func accepted(rcpts []queue.Recipient, results []smtpclient.RcptResult) ([]queue.Recipient, []smtpclient.RcptResult) {
	var rs []queue.Recipient
	var out []smtpclient.RcptResult
	for i, res := range results {
		if i < len(rcpts) && res.Reply.Class == smtpcodes.Success {
			rs, out = append(rs, rcpts[i]), append(out, res)
		}
	}
	return rs, out
}

// record writes the peer's verdict and counts the message; a peer that
// cannot be reached or says 421 ends the run.
func (r *run) record(env *queue.Envelope, rcpts []queue.Recipient, results []smtpclient.RcptResult) {
	o := r.d.o
	end := o.Clock.Now()
	outcomes, notices := o.Engine.Outcomes(env, rcpts, results, end)
	after, err := o.Store.Record(env.ID, outcomes, notices...)
	if err != nil {
		o.Logger.Error("drain: recording the peer's reply failed; the message stays claimed here", "id", env.ID, "err", err)
		r.d.count(false, true)
		return
	}
	whole := true
	for _, oc := range outcomes {
		if oc.Status != queue.StatusDelivered {
			whole = false
		}
		o.Logger.Info("drain", "id", env.ID, "rcpt", oc.Address, "to", r.req.To, "status", oc.Status, "reply", oc.Reply)
	}
	r.d.count(whole, !after.Done())
	for _, res := range results {
		if peerGone(res.Reply) {
			r.mu.Lock()
			if r.peerErr == nil {
				r.peerErr = fmt.Errorf("drain: peer %s: %s", r.req.To, res.Reply)
			}
			r.mu.Unlock()
			return
		}
	}
}

// peerGone: the peer could not be reached (connection, TLS, AUTH), or said
// it is closing (421): every further message would fail the same way. A
// body this node cannot read (4.3.0) is the message's trouble, not the
// peer's.
func peerGone(rep smtpcodes.Reply) bool {
	if rep.SuspendsDestination() {
		return true
	}
	return rep.Class == smtpcodes.Transient && !rep.Remote() && rep.Enhanced != "4.3.0"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
