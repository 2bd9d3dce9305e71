package e2e

import (
	"fmt"
	"math/rand"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// crashSink is the next hop of TestCrashSafety: it counts every token
// delivered, keeps the messages whose bytes changed, and can hold one
// delivery before its 250 while the relay is killed.
type crashSink struct {
	mx        *smtptest.Server
	mu        sync.Mutex
	delivered map[string]int
	badBytes  []string
	// armed: the next delivery is held; hit gets a channel to close to
	// let it go.
	armed atomic.Bool
	hit   chan chan struct{}
	// expect, when set, gives the bytes a token's message must end with
	// (testMessage otherwise).
	expect func(tok string) string
}

func newCrashSink(t *testing.T) *crashSink {
	s := &crashSink{delivered: map[string]int{}, hit: make(chan chan struct{}, 1)}
	s.mx = smtptest.NewServer(t, smtptest.DiscardEvents(), smtptest.OnMessage(s.take))
	return s
}

// take counts m. OnMessage runs before the 250 goes back to the relay, so
// killing the relay while it holds one is a kill in the middle of a
// delivery.
func (s *crashSink) take(m smtptest.Message) {
	tok := tokenOf(m.Data)
	want := testMessage(tok)
	if s.expect != nil {
		want = s.expect(tok)
	}
	s.mu.Lock()
	s.delivered[tok]++
	if bareNewline(m.Data) || tok == "" || !hasSuffix(m.Data, want) {
		s.badBytes = append(s.badBytes, fmt.Sprintf("%q", m.Data))
	}
	s.mu.Unlock()
	if s.armed.CompareAndSwap(true, false) {
		done := make(chan struct{})
		s.hit <- done
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	}
}

// allArrived reports whether every accepted token was delivered.
func (s *crashSink) allArrived(outcomes map[string]outcome) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok, o := range outcomes {
		if o == accepted && s.delivered[tok] == 0 {
			return false
		}
	}
	return true
}

// check holds the deliveries against what the clients were told: every
// accepted token delivered, nothing refused or cut off delivered, no
// token nobody sent, no bytes changed; it logs the counts.
func (s *crashSink) check(t *testing.T, outcomes map[string]outcome) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := map[outcome]int{}
	var inDoubtDelivered, deliveredTotal, duplicates int
	for tok, o := range outcomes {
		counts[o]++
		n := s.delivered[tok]
		switch o {
		case refused, lostBeforeDot:
			if n > 0 {
				t.Errorf("token %s (%s) was delivered %d times", tok, o, n)
			}
		case inDoubt:
			if n > 0 {
				inDoubtDelivered++
			}
		}
	}
	for tok, n := range s.delivered {
		deliveredTotal += n
		duplicates += max(n-1, 0)
		if _, ok := outcomes[tok]; !ok {
			t.Errorf("delivered a message no client sent: token %q", tok)
		}
	}
	if counts[accepted] != crashMessages {
		t.Errorf("%d messages accepted, want %d", counts[accepted], crashMessages)
	}
	for _, b := range s.badBytes {
		t.Errorf("delivered message altered or with a bare CR/LF: %s", b)
	}
	t.Logf("tokens sent %d: accepted %d, refused %d, lost before dot %d, in doubt %d (of which delivered %d)",
		len(outcomes), counts[accepted], counts[refused], counts[lostBeforeDot], counts[inDoubt], inDoubtDelivered)
	t.Logf("delivered %d messages (%d distinct tokens), duplicates %d", deliveredTotal, len(s.delivered), duplicates)
}

// snapshot copies what the clients know.
func (l *ledger) snapshot() map[string]outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]outcome, len(l.outcome))
	for k, v := range l.outcome {
		out[k] = v
	}
	return out
}

// crashRun is one TestCrashSafety run: the relay, its next hop, the
// clients' ledger and the killer's state.
type crashRun struct {
	r     *relay
	sink  *crashSink
	state *upState
	led   *ledger
	// commitArmed: the next final dot a client sends is reported on
	// commitHit (a kill while that message is being committed).
	commitArmed atomic.Bool
	commitHit   chan struct{}
	errs        chan error
	kills       int
	modes       []string
}

// startClients starts the submitting clients; the channel is closed when
// all are done.
func (c *crashRun) startClients() <-chan struct{} {
	beforeDot := func() {
		if c.commitArmed.CompareAndSwap(true, false) {
			c.commitHit <- struct{}{}
		}
	}
	var next atomic.Int64
	var clients sync.WaitGroup
	done := make(chan struct{})
	for range crashClients {
		clients.Add(1)
		go func() {
			defer clients.Done()
			if err := submitAll(c.r.addr, c.state, c.led, &next, beforeDot); err != nil {
				c.errs <- err
			}
		}()
	}
	go func() { clients.Wait(); close(done) }()
	return done
}

// killThresholds draws the submission counts at which the relay is killed.
func killThresholds(rng *rand.Rand) []int64 {
	th := make([]int64, crashKills)
	for i := range th {
		th[i] = int64(100 + rng.Intn(crashMessages-400))
	}
	sort.Slice(th, func(i, j int) bool { return th[i] < th[j] })
	return th
}

// killAt waits for each threshold of accepted messages, then kills the
// relay in the next of the kill modes and restarts it.
func (c *crashRun) killAt(rng *rand.Rand, thresholds []int64, clientsDone <-chan struct{}) {
	for i, th := range thresholds {
		for c.led.accepted.Load() < th && !isClosed(clientsDone) {
			select {
			case <-c.led.progress:
			case <-clientsDone:
			case <-time.After(30 * time.Second):
				c.errs <- fmt.Errorf("no submission progress for 30s at %d accepted", c.led.accepted.Load())
				return
			}
		}
		if err := c.killOnce(rng, killMode(i%3)); err != nil {
			c.errs <- err
			return
		}
	}
}

// killOnce arms mode, kills the relay when it is reached (or after 3 s,
// when nobody submits any more), and restarts it.
func (c *crashRun) killOnce(rng *rand.Rand, mode killMode) error {
	var release chan struct{}
	switch mode {
	case killSubmitting:
		wait := time.NewTimer(time.Duration(rng.Intn(50)) * time.Millisecond)
		<-wait.C
	case killCommitting:
		c.commitArmed.Store(true)
		select {
		case <-c.commitHit:
		case <-time.After(3 * time.Second):
			c.commitArmed.Store(false)
		}
	case killDelivering:
		c.sink.armed.Store(true)
		select {
		case release = <-c.sink.hit:
		case <-time.After(3 * time.Second):
			c.sink.armed.Store(false)
		}
	}
	c.state.down()
	c.r.kill()
	c.kills++
	c.modes = append(c.modes, mode.String())
	if release != nil {
		close(release)
	}
	if err := c.r.start(); err != nil {
		return fmt.Errorf("restart after kill %d: %w", c.kills, err)
	}
	c.state.markUp()
	return nil
}
