package e2e

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
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
	if testing.Short() {
		t.Skip("end-to-end crash test skipped with -short")
	}
	rng := seededRand(t, "kill timing")

	var (
		dmu       sync.Mutex
		delivered = map[string]int{}
		badBytes  []string
	)
	deliverArmed := atomic.Bool{}
	deliverHit := make(chan chan struct{}, 1)
	mx := smtptest.NewServer(t, smtptest.DiscardEvents(), smtptest.OnMessage(func(m smtptest.Message) {
		tok := tokenOf(m.Data)
		dmu.Lock()
		delivered[tok]++
		if bareNewline(m.Data) || tok == "" || !hasSuffix(m.Data, testMessage(tok)) {
			badBytes = append(badBytes, fmt.Sprintf("%q", m.Data))
		}
		dmu.Unlock()
		// OnMessage runs before the 250 goes back to the relay, so killing
		// the relay here is a kill in the middle of a delivery.
		if deliverArmed.CompareAndSwap(true, false) {
			done := make(chan struct{})
			deliverHit <- done
			select {
			case <-done:
			case <-time.After(10 * time.Second):
			}
		}
	}))

	r := newRelay(t, mx.Addr(), "", "shutdown_timeout: 5s\n")
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
	state := newUpState()
	state.markUp()
	led := &ledger{outcome: map[string]outcome{}, progress: make(chan struct{}, 1)}
	commitArmed := atomic.Bool{}
	commitHit := make(chan struct{}, 1)
	beforeDot := func() {
		if commitArmed.CompareAndSwap(true, false) {
			commitHit <- struct{}{}
		}
	}

	errs := make(chan error, crashClients+1)
	var next atomic.Int64
	var clients sync.WaitGroup
	clientsDone := make(chan struct{})
	for w := 0; w < crashClients; w++ {
		clients.Add(1)
		go func() {
			defer clients.Done()
			if err := submitAll(r.addr, state, led, &next, beforeDot); err != nil {
				errs <- err
			}
		}()
	}
	go func() { clients.Wait(); close(clientsDone) }()

	// The killer: at randomly chosen points of submission progress, arm one
	// of the kill modes, then kill, restart and tell the clients.
	thresholds := make([]int64, crashKills)
	for i := range thresholds {
		thresholds[i] = int64(100 + rng.Intn(crashMessages-400))
	}
	sort.Slice(thresholds, func(i, j int) bool { return thresholds[i] < thresholds[j] })
	var kills int
	var modes []string
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		for i, th := range thresholds {
			for led.accepted.Load() < th {
				select {
				case <-led.progress:
				case <-clientsDone:
				case <-time.After(30 * time.Second):
					errs <- fmt.Errorf("no submission progress for 30s at %d accepted", led.accepted.Load())
					return
				}
				if isClosed(clientsDone) {
					break
				}
			}
			mode := killMode(i % 3)
			var release chan struct{}
			switch mode {
			case killSubmitting:
				wait := time.NewTimer(time.Duration(rng.Intn(50)) * time.Millisecond)
				<-wait.C
			case killCommitting:
				commitArmed.Store(true)
				select {
				case <-commitHit:
				case <-time.After(3 * time.Second): // no one submitting any more: kill anyway
					commitArmed.Store(false)
				}
			case killDelivering:
				deliverArmed.Store(true)
				select {
				case release = <-deliverHit:
				case <-time.After(3 * time.Second):
					deliverArmed.Store(false)
				}
			}
			state.down()
			r.kill()
			kills++
			modes = append(modes, mode.String())
			if release != nil {
				close(release)
			}
			if err := r.start(); err != nil {
				errs <- fmt.Errorf("restart after kill %d: %w", kills, err)
				return
			}
			state.markUp()
		}
	}()

	select {
	case <-clientsDone:
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(90 * time.Second):
		t.Fatalf("clients not done after 90s: %d accepted", led.accepted.Load())
	}
	<-killerDone
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}

	// Every accepted token must arrive; wait for that, bounded.
	led.mu.Lock()
	outcomes := make(map[string]outcome, len(led.outcome))
	for k, v := range led.outcome {
		outcomes[k] = v
	}
	led.mu.Unlock()
	allAcceptedDelivered := func() bool {
		dmu.Lock()
		defer dmu.Unlock()
		for tok, o := range outcomes {
			if o == accepted && delivered[tok] == 0 {
				return false
			}
		}
		return true
	}
	mx.WaitFor(t, 45*time.Second, allAcceptedDelivered)

	code, err := r.term(10 * time.Second)
	if err != nil || code != 0 {
		t.Errorf("SIGTERM after the run: exit %d, %v", code, err)
	}

	dmu.Lock()
	defer dmu.Unlock()
	counts := map[outcome]int{}
	var acceptedN, duplicates, inDoubtDelivered, deliveredTotal int
	for tok, o := range outcomes {
		counts[o]++
		n := delivered[tok]
		switch o {
		case accepted:
			acceptedN++
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
	for tok, n := range delivered {
		deliveredTotal += n
		if n > 1 {
			duplicates += n - 1
		}
		if _, ok := outcomes[tok]; !ok {
			t.Errorf("delivered a message no client sent: token %q", tok)
		}
	}
	if acceptedN != crashMessages {
		t.Errorf("%d messages accepted, want %d", acceptedN, crashMessages)
	}
	if kills < 5 {
		t.Errorf("only %d kills", kills)
	}
	for _, b := range badBytes {
		t.Errorf("delivered message altered or with a bare CR/LF: %s", b)
	}
	t.Logf("kills %d (%v); tokens sent %d: accepted %d, refused %d, lost before dot %d, in doubt %d (of which delivered %d)",
		kills, modes, len(outcomes), acceptedN, counts[refused], counts[lostBeforeDot], counts[inDoubt], inDoubtDelivered)
	t.Logf("delivered %d messages (%d distinct tokens), duplicates %d", deliveredTotal, len(delivered), duplicates)
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
