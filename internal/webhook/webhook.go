package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/relayq/relayq/internal/backoff"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/redact"
	"github.com/relayq/relayq/queue"
)

// Hook is one configured webhook.
type Hook struct {
	// Name keys the durable cursor and the metrics; default the URL.
	Name   string
	URL    string
	Secret string
	// Types are the event types sent; none means all.
	Types []queue.EventType
	// Batch is the most events per POST; default 100.
	Batch int
	// Tenant, if set, limits the hook to that tenant's events.
	Tenant *queue.TenantFilter
}

// Source is where events come from, with the durable cursors; queue.Events
// (the store's event log) is one.
type Source interface {
	List(q queue.EventQuery) ([]queue.Event, string, error)
	Changed() <-chan struct{}
	Backlog(cursor string) (int, error)
	Cursor(name string) (string, error)
	SetCursor(name, id string) error
}

// Observer receives what metrics want to know. Labels are hook names, so
// bounded by the configuration.
type Observer interface {
	Sent(hook string, events int)
	Failed(hook string)
	Backlog(hook string, events int)
}

// Options configure Run.
type Options struct {
	Source Source
	Hooks  []Hook
	// Backoff spaces retries of a failed batch; relayq passes retry.*.
	Backoff backoff.Backoff
	// Timeout bounds one POST; default 30s.
	Timeout time.Duration
	// Linger, after a batch that was not full, waits this long for more
	// events before the next read, so a busy relay sends fewer, fuller
	// batches (fewer requests and cursor writes); 0 sends at once.
	Linger time.Duration
	// Client makes the requests; default a fresh http.Client.
	Client   *http.Client
	Clock    clock.Clock
	Rand     *rand.Rand
	Logger   *slog.Logger
	Observer Observer
}

// SignatureHeader and TimestampHeader are the request headers that carry
// the signature and the time of sending.
const (
	SignatureHeader = "X-Relayq-Signature"
	TimestampHeader = "X-Relayq-Timestamp"
)

// Sign returns the X-Relayq-Signature value for body.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a signature header against body in constant time.
func Verify(secret string, body []byte, header string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(header))
}

// Run sends events to every hook, one goroutine each, until ctx ends.
func Run(ctx context.Context, o Options) {
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	o.Client = noRedirects(o.Client)
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5eed))
	}
	var wg sync.WaitGroup
	var rndMu sync.Mutex
	for _, h := range o.Hooks {
		if h.Name == "" {
			h.Name = h.URL
		}
		if h.Batch <= 0 {
			h.Batch = 100
		}
		s := &sender{o: o, h: h, shown: redact.URL(h.Name), rndMu: &rndMu}
		wg.Add(1)
		go func() { defer wg.Done(); s.run(ctx) }()
	}
	wg.Wait()
}

type sender struct {
	o Options
	h Hook
	// shown names the hook in log lines: its Name without the userinfo,
	// query and fragment a URL may carry secrets in, as its metric
	// labels do.
	shown string
	rndMu *sync.Mutex
}

// run is one webhook's loop: read a batch after the cursor, post it until
// it is taken, move the cursor, repeat; wait for a commit when caught up.
func (s *sender) run(ctx context.Context) {
	cursor, err := s.o.Source.Cursor(s.h.Name)
	if err != nil {
		s.o.Logger.Error("webhook: cannot read its cursor; not sending", "webhook", s.shown, "err", err)
		return
	}
	failures := 0
	for ctx.Err() == nil {
		changed := s.o.Source.Changed()
		evs, last, err := s.o.Source.List(queue.EventQuery{After: cursor, Types: s.h.Types, Limit: s.h.Batch, Tenant: s.h.Tenant})
		if err != nil {
			s.o.Logger.Error("webhook: reading events failed", "webhook", s.shown, "err", err)
			failures++
			s.sleep(ctx, failures)
			continue
		}
		s.backlog(cursor)
		if len(evs) == 0 {
			if last != cursor && s.o.Source.SetCursor(s.h.Name, last) == nil {
				cursor = last // past events of types this hook does not take
			}
			select {
			case <-changed:
			case <-ctx.Done():
			}
			continue
		}
		if err := s.busy(ctx, cursor, func() error { return s.post(ctx, evs) }); err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			if s.o.Observer != nil {
				s.o.Observer.Failed(s.h.Name)
			}
			s.o.Logger.Warn("webhook: batch not accepted, will retry", "webhook", s.shown, "events", len(evs),
				"first", evs[0].ID, "failures", failures, "err", err)
			_ = s.busy(ctx, cursor, func() error { s.sleep(ctx, failures); return nil })
			continue
		}
		failures = 0
		if s.o.Observer != nil {
			s.o.Observer.Sent(s.h.Name, len(evs))
		}
		if err := s.o.Source.SetCursor(s.h.Name, last); err != nil {
			// The batch will be sent again: at least once, never skipped.
			s.o.Logger.Error("webhook: cannot store its cursor", "webhook", s.shown, "err", err)
			s.sleep(ctx, 1)
			continue
		}
		cursor = last
		if len(evs) < s.h.Batch && s.o.Linger > 0 {
			s.wait(ctx, s.o.Linger)
		}
	}
}

func (s *sender) backlog(cursor string) {
	if s.o.Observer == nil {
		return
	}
	if n, err := s.o.Source.Backlog(cursor); err == nil {
		s.o.Observer.Backlog(s.h.Name, n)
	}
}

// busy runs f (a POST, a wait before a retry) and meanwhile keeps the
// backlog metric current at every commit: a POST may hang for Timeout and
// a retry wait for minutes, and the events queued meanwhile are the
// backlog an operator watches.
func (s *sender) busy(ctx context.Context, cursor string, f func() error) error {
	if s.o.Observer == nil {
		return f()
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-s.o.Source.Changed():
				s.backlog(cursor)
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	err := f()
	close(done)
	<-stopped
	return err
}

// sleep waits the backoff for the given number of consecutive failures.
func (s *sender) sleep(ctx context.Context, failures int) {
	s.rndMu.Lock()
	d := s.o.Backoff.Delay(failures, s.o.Rand)
	s.rndMu.Unlock()
	if d <= 0 {
		d = time.Second
	}
	s.wait(ctx, d)
}

// wait waits d on the clock, or until ctx ends.
func (s *sender) wait(ctx context.Context, d time.Duration) {
	t := s.o.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-ctx.Done():
	}
}

// batchBody is the POST body, {"events":[...]}, each event in its
// documented JSON form (queue.Event.AppendJSON: encoding/json's reflection
// over every event was a cost the relay paid per message).
func batchBody(evs []queue.Event) []byte {
	b := make([]byte, 0, 64+400*len(evs))
	b = append(b, `{"events":[`...)
	for i := range evs {
		if i > 0 {
			b = append(b, ',')
		}
		b = evs[i].AppendJSON(b)
	}
	return append(b, ']', '}')
}

// post sends one batch; nil only for a 2xx answer.
func (s *sender) post(ctx context.Context, evs []queue.Event) error {
	body := batchBody(evs)
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.h.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "relayq-webhook")
	req.Header.Set(TimestampHeader, strconv.FormatInt(s.o.Clock.Now().Unix(), 10))
	req.Header.Set(SignatureHeader, Sign(s.h.Secret, body))
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return redact.Error(err) // it quotes the URL, query and all
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		return fmt.Errorf("answered %s to %s (redirects are not followed: fix the webhook's URL)",
			resp.Status, redact.URL(resp.Header.Get("Location")))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}

// noRedirects returns a copy of c (a fresh client when nil) that never
// follows a redirect, so post sees every 3xx itself. Followed, a 302 or
// 303 turns the POST into a body-less GET (RFC 9110 section 15.4.3)
// whose 200 would move the cursor past events the receiver never got,
// and a 307 or 308 re-sends the signed body to whatever host Location
// names. A redirect is therefore a failure, retried against the
// configured URL.
func noRedirects(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	}
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &out
}
