package e2e

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Crash test shape. Kept small enough for about 30 s on two cores.
const (
	crashClients  = 20
	crashMessages = 2000
	crashKills    = 9
)

// killMode says when, relative to the traffic, the relay is killed.
type killMode int

const (
	// killSubmitting kills at a random moment while clients are submitting.
	killSubmitting killMode = iota
	// killCommitting kills right as a client sends its final dot, i.e.
	// while that message is being written and fsync'd in a group commit.
	killCommitting
	// killDelivering kills while the next hop holds a complete message and
	// has not yet replied 250 to the relay: a delivery in flight.
	killDelivering
)

func (m killMode) String() string {
	return [...]string{"submitting", "committing", "delivering"}[m]
}

// upState tells clients whether the relay is up and which run it is.
type upState struct {
	mu  sync.Mutex
	gen int
	up  chan struct{} // closed while the relay is up
}

func newUpState() *upState { return &upState{up: make(chan struct{})} }

func (u *upState) get() (int, <-chan struct{}) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.gen, u.up
}

func (u *upState) down() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.gen++
	u.up = make(chan struct{})
}

func (u *upState) markUp() {
	u.mu.Lock()
	defer u.mu.Unlock()
	close(u.up)
}

// ledger is what the clients know about every token they sent.
type ledger struct {
	mu       sync.Mutex
	outcome  map[string]outcome
	accepted atomic.Int64
	progress chan struct{} // gets a value (non-blocking) after each acceptance
}

func (l *ledger) record(tok string, o outcome) {
	l.mu.Lock()
	l.outcome[tok] = o
	l.mu.Unlock()
	if o == accepted {
		l.accepted.Add(1)
		select {
		case l.progress <- struct{}{}:
		default:
		}
	}
}

// seededRand returns a random source from crashSeed, logging the seed so
// that a failure can be repeated; what says what the randomness decides.
func seededRand(t *testing.T, what string) *rand.Rand {
	seed := crashSeed(t)
	t.Logf("seed %d (set RELAYQ_E2E_SEED to repeat the %s)", seed, what)
	return rand.New(rand.NewSource(seed))
}

func crashSeed(t *testing.T) int64 {
	if s := os.Getenv("RELAYQ_E2E_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("RELAYQ_E2E_SEED: %v", err)
		}
		return n
	}
	return time.Now().UnixNano()
}

// TestCrashSafety kills relayq with SIGKILL at random moments while 20
// clients submit 2,000 messages and the relay delivers them, restarting it on
// the same queue file each time. Every message that got a 250 must reach the
// next hop; nothing refused or cut off before its final dot may.
func TestCrashSafety(t *testing.T) {
	rng := seededRand(t, "kill timing")
	sink := newCrashSink(t)
	r := startRelay(t, sink.mx.Addr(), withYAML("shutdown_timeout: 5s\n"))
	c := &crashRun{
		r: r, sink: sink, state: newUpState(),
		led:       &ledger{outcome: map[string]outcome{}, progress: make(chan struct{}, 1)},
		commitHit: make(chan struct{}, 1),
		errs:      make(chan error, crashClients+1),
	}
	c.state.markUp()
	clientsDone := c.startClients()
	killerDone := make(chan struct{})
	go func() { defer close(killerDone); c.killAt(rng, killThresholds(rng), clientsDone) }()

	select {
	case <-clientsDone:
	case err := <-c.errs:
		t.Fatal(err)
	case <-time.After(90 * time.Second):
		t.Fatalf("clients not done after 90s: %d accepted", c.led.accepted.Load())
	}
	<-killerDone
	select {
	case err := <-c.errs:
		t.Fatal(err)
	default:
	}

	// Every accepted token must arrive; wait for that, bounded.
	outcomes := c.led.snapshot()
	sink.mx.WaitFor(t, 45*time.Second, func() bool { return sink.allArrived(outcomes) })
	code, err := r.term(10 * time.Second)
	if err != nil || code != 0 {
		t.Errorf("SIGTERM after the run: exit %d, %v", code, err)
	}
	sink.check(t, outcomes)
	if c.kills < 5 {
		t.Errorf("only %d kills", c.kills)
	}
	t.Logf("kills %d (%v)", c.kills, c.modes)
}

// submitAll takes message numbers from next until all are accepted. A
// message that was not accepted is sent again under a new token.
func submitAll(addr string, state *upState, led *ledger, next *atomic.Int64, beforeDot func()) error {
	var c *client
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	// failures counts consecutive failures within one run of the relay;
	// failures across a restart are expected and free.
	failures, failGen := 0, -1
	fail := func(gen int, err error) error {
		if c != nil {
			c.close()
			c = nil
		}
		if gen != failGen {
			failGen, failures = gen, 0
		}
		if failures++; failures > 50 {
			return fmt.Errorf("50 failures in a row while the relay was up: %w", err)
		}
		return nil
	}
	for {
		n := next.Add(1) - 1
		if n >= crashMessages {
			return nil
		}
		for attempt := 0; ; attempt++ {
			gen, up := state.get()
			select {
			case <-up:
			case <-time.After(30 * time.Second):
				return fmt.Errorf("relay not back up within 30s")
			}
			if c == nil {
				var err error
				if c, err = dialClient(addr); err != nil {
					c = nil
					if e := fail(gen, err); e != nil {
						return e
					}
					continue
				}
			}
			tok := fmt.Sprintf("tok-%04d-%d", n, attempt)
			o, line, err := c.send("app@example.org", "rcpt@example.net", testMessage(tok), beforeDot)
			led.record(tok, o)
			if o == accepted {
				failures = 0
				break
			}
			if err == nil {
				err = fmt.Errorf("reply %q", line)
			}
			if e := fail(gen, err); e != nil {
				return e
			}
		}
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func hasSuffix(b []byte, s string) bool {
	return len(b) >= len(s) && string(b[len(b)-len(s):]) == s
}
