package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// loadSpec is one burst of submissions.
type loadSpec struct {
	Addr     string
	Sessions int
	Count    int
	Size     int
	Run      string
	Base     time.Time // zero point of every recorded time
	From, To string
	// Query is added to the HTTP API's path ("?send_at=..."), "" for none.
	Query string
}

// loadResult holds per-message times relative to Base; a message whose
// transaction failed has ok[seq] false.
type loadResult struct {
	start    []time.Duration // MAIL FROM sent
	dot      []time.Duration // the message's end (last bytes and final dot) handed to the socket
	done     []time.Duration // 250 after DATA read
	ok       []bool
	sent     atomic.Int64 // transactions finished with 250
	failed   atomic.Int64
	firstErr atomic.Value // error
	mu       sync.Mutex
}

func newLoadResult(n int) *loadResult {
	return &loadResult{
		start: make([]time.Duration, n), dot: make([]time.Duration, n),
		done: make([]time.Duration, n), ok: make([]bool, n),
	}
}

func (r *loadResult) fail(err error) {
	r.failed.Add(1)
	r.firstErr.CompareAndSwap(nil, err)
}

// firstError is the first transaction error, or nil.
func (r *loadResult) firstError() error {
	if e, ok := r.firstErr.Load().(error); ok {
		return e
	}
	return nil
}

// runLoad submits spec.Count messages over spec.Sessions connections, each
// connection reused for one message per transaction, until done or ctx ends.
// It fills res as it goes so a progress reporter can read the counters.
func runLoad(ctx context.Context, spec loadSpec, res *loadResult) {
	body := bodyFor(spec.Size)
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < spec.Sessions; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runSession(ctx, spec, body, &next, res)
		}()
	}
	wg.Wait()
}

// runSession is one client connection taking message numbers from next.
// A failed transaction drops the connection; the next message redials.
func runSession(ctx context.Context, spec loadSpec, body []byte, next *atomic.Int64, res *loadResult) {
	var c *smtp.Client
	defer func() {
		if c != nil {
			c.Quit()
			c.Close()
		}
	}()
	stop := context.AfterFunc(ctx, func() {
		// Unblocks a session stuck in I/O when the run times out.
		res.mu.Lock()
		defer res.mu.Unlock()
		if c != nil {
			c.Close()
		}
	})
	defer stop()
	for ctx.Err() == nil {
		seq := int(next.Add(1) - 1)
		if seq >= spec.Count {
			return
		}
		if c == nil {
			nc, err := dialClient(spec.Addr)
			if err != nil {
				res.fail(err)
				continue
			}
			res.mu.Lock()
			c = nc
			res.mu.Unlock()
		}
		if err := submitOne(c, spec, seq, body, res); err != nil {
			res.fail(fmt.Errorf("message %d: %w", seq, err))
			res.mu.Lock()
			c.Close()
			c = nil
			res.mu.Unlock()
		}
	}
}

// dialClient opens a session and says EHLO.
func dialClient(addr string) (*smtp.Client, error) {
	c, err := smtp.Dial(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	c.CommandTimeout = 2 * time.Minute
	c.SubmissionTimeout = 5 * time.Minute
	if err := c.Hello("client.relaybench.localhost"); err != nil {
		c.Close()
		return nil, fmt.Errorf("ehlo %s: %w", addr, err)
	}
	return c, nil
}

// submitOne runs one MAIL/RCPT/DATA transaction and records its times.
func submitOne(c *smtp.Client, spec loadSpec, seq int, body []byte, res *loadResult) error {
	now := time.Now()
	res.start[seq] = now.Sub(spec.Base)
	if err := c.Mail(spec.From, nil); err != nil {
		return err
	}
	if err := c.Rcpt(spec.To, nil); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	head := messageHead(tag{Run: spec.Run, Seq: seq, Sent: now}, spec.From, spec.To)
	if _, err := w.Write(head); err != nil {
		return err
	}
	if _, err := w.Write(body); err != nil {
		return err
	}
	// Close sends what the client still buffers (all of a 1 KiB message)
	// and the final dot, then reads the reply: from here on the client is
	// waiting for the relay to make the message durable.
	res.dot[seq] = time.Since(spec.Base)
	if err := w.Close(); err != nil {
		return err
	}
	res.done[seq] = time.Since(spec.Base)
	res.ok[seq] = true
	res.sent.Add(1)
	return nil
}
