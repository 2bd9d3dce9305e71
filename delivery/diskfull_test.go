package delivery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/testfs"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

// disk fills the file system under dir and frees it again.
type disk struct {
	t      *testing.T
	filler string
	once   sync.Once
}

// fill writes a file until the file system says ENOSPC. Safe to call from
// any goroutine; it fills once.
func (d *disk) fill() {
	d.once.Do(func() {
		f, err := os.Create(d.filler)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		buf := make([]byte, 4096)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					panic(err)
				}
				return
			}
		}
	})
}

// free deletes the filler: space is back.
func (d *disk) free() {
	d.t.Helper()
	if err := os.Remove(d.filler); err != nil {
		d.t.Fatal(err)
	}
}

// logCounter counts log lines by message, and signals each error line.
type logCounter struct {
	mu     sync.Mutex
	counts map[string]int
	levels map[string]slog.Level
	errs   chan string
}

func newLogCounter() *logCounter {
	return &logCounter{counts: map[string]int{}, levels: map[string]slog.Level{}, errs: make(chan string, 1<<16)}
}

func (l *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCounter) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logCounter) WithGroup(string) slog.Handler            { return l }
func (l *logCounter) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.counts[r.Message]++
	l.levels[r.Message] = r.Level
	l.mu.Unlock()
	if r.Level >= slog.LevelError {
		select {
		case l.errs <- r.Message:
		default:
		}
	}
	return nil
}

// matching counts lines whose message contains s.
func (l *logCounter) matching(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for m, c := range l.counts {
		if strings.Contains(m, s) {
			n += c
		}
	}
	return n
}

// storageObserver is chanObserver that also counts storage errors.
type storageObserver struct {
	chanObserver
	mu     sync.Mutex
	errors map[StorageOp]int
}

func (o *storageObserver) StorageError(op StorageOp) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.errors == nil {
		o.errors = map[StorageOp]int{}
	}
	o.errors[op]++
}

func (o *storageObserver) total() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, c := range o.errors {
		n += c
	}
	return n
}

// diskRig is an engine whose queue lives on a small tmpfs.
type diskRig struct {
	t     *testing.T
	clk   *clock.Fake
	store *queue.Store
	eng   *Engine
	disk  *disk
	logs  *logCounter
	obs   *storageObserver
	stop  func()
}

func newDiskRig(t *testing.T, size string, courier func(d *disk) Courier, addr string, mod func(*Options)) *diskRig {
	t.Helper()
	dir := testfs.Tmpfs(t, size)
	r := &diskRig{t: t, clk: clock.NewFake(t0), disk: &disk{t: t, filler: filepath.Join(dir, "filler")}, logs: newLogCounter()}
	r.obs = &storageObserver{chanObserver: chanObserver{make(chan string, 100000)}}
	st, err := queue.Open(filepath.Join(dir, "queue.db"), queue.Options{Clock: r.clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r.store = st
	o := Options{
		Store:    st,
		Router:   route.NewRouter(route.Options{Routes: map[string]string{"*": addr}}),
		Courier:  courier(r.disk),
		Policy:   defaultPolicy(),
		Hostname: "relay.test",
		Clock:    r.clk,
		Rand:     rand.New(rand.NewPCG(1, 2)),
		Logger:   slog.New(r.logs),
		Observer: r.obs,
	}
	if mod != nil {
		mod(&o)
	}
	eng, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	r.eng = eng
	t.Cleanup(func() { st.Close() })
	return r
}

// run starts the engine (after the test queued what it needs).
func (r *diskRig) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.eng.Run(ctx, time.Second); close(done) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	r.t.Cleanup(r.stop)
}

// queueWith commits n messages of about size bytes, RET ret, to the
// recipients rcpts(i).
func (r *diskRig) queueWith(n, size int, ret string, rcpts func(i int) []string) []string {
	r.t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		d := r.store.NewDraft()
		fmt.Fprintf(d, "Subject: %d\r\n\r\n", i)
		for j := 0; j < size; j += 100 {
			fmt.Fprintf(d, "%s\r\n", strings.Repeat("x", 98))
		}
		env := queue.Envelope{From: "app@example.org", Created: t0, RET: ret}
		for _, a := range rcpts(i) {
			env.Recipients = append(env.Recipients, queue.Recipient{Address: a})
		}
		if err := d.Commit(env); err != nil {
			r.t.Fatal(err)
		}
		ids = append(ids, d.ID())
	}
	return ids
}

// waitError waits for the next error log line containing s.
func (r *diskRig) waitError(s string) {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-r.logs.errs:
			if strings.Contains(m, s) {
				return
			}
		case <-deadline:
			r.t.Fatalf("no %q error within 10s", s)
		}
	}
}

// fillingDialer dials with the real client to a closed port, filling the
// disk once every attempt the engine has in flight (inFlight) has dialed:
// their claims are on disk, everything after them finds the disk full.
// The dials wait for one another, so that how the job goroutines happen
// to be scheduled never decides which write fails first: with a claim
// made after the fill, its failure could start the back-off before the
// suspension's postpone were tried. Then the pages bbolt has free inside
// the queue file are used up too (useFreePages), or what fits in them
// would depend on which transactions happened to free them.
func fillingDialer(d *disk, st func() *queue.Store, inFlight func() int) Courier {
	var mu sync.Mutex
	var dials int
	var once sync.Once
	full := make(chan struct{})
	return &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", ConnectTimeout: 5 * time.Second, CommandTimeout: 5 * time.Second,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dials++
			if dials >= inFlight() {
				once.Do(func() {
					d.fill()
					useFreePages(st())
					close(full)
				})
			}
			mu.Unlock()
			select {
			case <-full:
			case <-time.After(time.Minute):
				panic("fillingDialer: the attempts in flight never all dialed")
			}
			var nd net.Dialer
			return nd.DialContext(ctx, network, addr)
		}}
}

// useFreePages commits small messages, released only in a year (so never
// due in the test), until two commits in a row fail on the full disk: the
// first failure makes bbolt free the pages still pending, the second shows
// that even those are too few for another such message. The engine's
// postpones, which move many envelopes, cannot fit after that.
func useFreePages(st *queue.Store) {
	failures := 0
	for failures < 2 {
		d := st.NewDraft()
		io.WriteString(d, "Subject: filler\r\n\r\nx\r\n")
		env := queue.Envelope{From: "filler@example.org", Created: t0, Release: t0.AddDate(1, 0, 0),
			Recipients: []queue.Recipient{{Address: "filler@filler.example"}}}
		if err := d.Commit(env); err != nil {
			d.Abort()
			failures++
			continue
		}
		failures = 0
	}
}

// attemptsInFlight counts eng's attempts under way, all destinations.
func attemptsInFlight(eng *Engine) int {
	n := 0
	for _, f := range eng.InFlight() {
		n += f.Attempts
	}
	return n
}

// With the disk full, mail waiting for a suspended destination cannot be
// postponed on disk. Before, every failed postpone reset the scan, which
// found the same mail due and failed again: 75-134 failures a second and
// a CPU busy until space was freed. Now a failed
// write backs off (counted by the observer) and the scheduler sleeps.
// Each message also has a recipient at a second dead destination, so it
// is moved forward on disk (a whole envelope per message), not parked by
// tag, which fits in the pages bbolt has free.
//
// The fake clock moves only once the scheduler is idle (idleWatch): what
// a pass does is then counted in full, whatever the machine's load.
func TestDiskFullSuspendedDestinationBacksOff(t *testing.T) {
	var r *diskRig
	courier := func(d *disk) Courier {
		return fillingDialer(d, func() *queue.Store { return r.store }, func() int { return attemptsInFlight(r.eng) })
	}
	r = newDiskRig(t, "16m", courier, smtptest.DownAddr(t), func(o *Options) {
		// Connections never refuse a job (their 100 ms re-check would be
		// a timer of its own): the slow-start window bounds the attempts.
		o.MaxConnsPerDest = 10
		o.Router = route.NewRouter(route.Options{Routes: map[string]string{"*": smtptest.DownAddr(t), "other.example": smtptest.DownAddr(t)}})
		// The suspension outlasts the storage back-off.
		o.Policy.Backoff = queue.Backoff{Initial: 10 * time.Minute, Multiplier: 2, Max: time.Hour}
	})
	ids := r.queueWith(200, 1000, "", func(i int) []string {
		return []string{fmt.Sprintf("u%d@dead.example", i), fmt.Sprintf("u%d@other.example", i)}
	})
	idle := watchIdle(r.eng, r.clk)
	r.run()
	// The first attempts are refused: the destinations are suspended, and
	// the 199 other messages cannot be postponed on the full disk. The
	// scheduler then sleeps, its attempts done, without the clock moving.
	at, ok, settled := idle.wait(10 * time.Second)
	const postponeFailed = "postponing mail for a suspended destination failed"
	failed := r.logs.matching(postponeFailed)
	if !settled {
		t.Fatalf("the scheduler never went to sleep: %d failed postpones without the clock moving", failed)
	}
	if failed == 0 {
		t.Fatal("the mail of the suspended destinations was not postponed")
	}
	// Each queue write that works meanwhile (an outcome that fits in pages
	// bbolt freed earlier, so even on a full disk) ends the back-off, and
	// the scheduler may try once more: a few tries, never the hundreds of
	// the hot loop.
	if failed > 4 {
		t.Fatalf("%d failed postpones before the scheduler slept, want at most 4", failed)
	}
	if r.obs.total() == 0 {
		t.Fatal("storage errors were not reported to the observer (metrics)")
	}
	if !ok {
		t.Fatal("the scheduler sleeps with no timer: nothing would try the writes again")
	}
	if d := at.Sub(r.clk.Now()); d < time.Second {
		t.Fatalf("the scheduler wakes again after %v; a storage error must back off", d)
	}
	// While the disk stays full, a few tries per back-off period (a small
	// write may still fit in pages bbolt freed earlier), never a spin.
	var perRound []int
	for i := 0; i < 3; i++ {
		before := r.obs.total()
		r.clk.Set(at)
		next, ok := idle.settled(t, 10*time.Second)
		n := r.obs.total() - before
		if n == 0 {
			t.Fatalf("round %d: no write tried at the end of the back-off", i)
		}
		if !ok {
			t.Fatalf("round %d: the scheduler sleeps with no timer", i)
		}
		if n > 3 {
			t.Fatalf("round %d: %d storage errors in one back-off period, want 1 to 3", i, n)
		}
		if d := next.Sub(at); d < time.Second {
			t.Fatalf("round %d: the scheduler wakes again after %v while the disk stays full", i, d)
		}
		perRound = append(perRound, n)
		at = next
	}
	t.Logf("%d failed postpones before the scheduler first slept; storage errors per back-off period after: %v", failed, perRound)
	// Space is back: the next try postpones the mail to the end of the
	// suspension, and nothing was lost on the way.
	r.disk.free()
	errsBefore := r.obs.total()
	r.clk.Set(at)
	idle.settled(t, 10*time.Second)
	if n := r.obs.total() - errsBefore; n != 0 {
		t.Fatalf("%d storage errors after space came back", n)
	}
	for _, id := range ids {
		env, err := r.store.Get(id)
		if err != nil {
			t.Fatalf("message %s: %v", id, err)
		}
		if st := env.Recipients[0].Status; st.Final() {
			t.Fatalf("message %s: recipient %s, though its destination never answered", id, st)
		}
		if !env.Recipients[0].NextAttempt.After(r.clk.Now()) {
			t.Fatalf("message %s still due at %v after space came back; it should wait for the suspension",
				id, env.Recipients[0].NextAttempt.Sub(t0))
		}
	}
}

// plainDialer is the real client, no tricks.
func plainDialer(*disk) Courier {
	return &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", ConnectTimeout: 5 * time.Second, CommandTimeout: 5 * time.Second}
}

// A delivery whose outcome could not be written on a
// full disk was made again once its claim ran out (18 and 152 duplicates in
// the review, without any crash). Now the outcome is kept in memory and
// written when space returns; the message is never attempted again.
func TestDiskFullOutcomeKeptNotRedelivered(t *testing.T) {
	var r *diskRig
	srv := smtptest.NewServer(t, smtptest.Reply("rcpt:nobody@=550 5.1.1 No such user"), smtptest.OnMessage(func(smtptest.Message) {
		r.disk.fill() // the next hop has the message; our disk is full
	}))
	r = newDiskRig(t, "16m", plainDialer, srv.Addr(), func(o *Options) { o.MaxConnsPerDest = 20 })
	const n = 20
	// Each message is delivered to one recipient and bounced for the other,
	// with the whole message returned (RET=FULL): its outcome write holds a
	// 100 kB report, more than the pages bbolt has free on the full disk.
	ids := r.queueWith(n, 100<<10, "FULL", func(i int) []string {
		return []string{fmt.Sprintf("u%d@example.net", i), "nobody@example.net"}
	})
	r.run()
	deadline := time.Now().Add(10 * time.Second)
	for r.obs.count(StorageRecord) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no outcome write failed on the full disk within 10s")
		}
		r.clk.WaitTimer(r.clk.Now(), 100*time.Millisecond)
	}
	// An hour passes with the disk full: every claim runs out many times
	// over, and the scheduler retries its writes on its back-off.
	r.advance(time.Hour)
	r.disk.free()
	r.advance(time.Hour)
	srv.WaitFor(t, 10*time.Second, func() bool { return r.queued() == 0 })

	got := map[string]int{}
	bounces := 0
	for _, m := range srv.Messages() {
		if m.From == "" {
			bounces++
			continue
		}
		got[subjectOf(m.Data)]++
	}
	for i := 0; i < n; i++ {
		if c := got[fmt.Sprint(i)]; c != 1 {
			t.Errorf("message %d (%s) delivered %d times, want exactly once", i, ids[i], c)
		}
	}
	if bounces != n {
		t.Errorf("%d bounce reports for %d messages, want one each", bounces, n)
	}
	t.Logf("%d outcome writes failed on the full disk", r.obs.count(StorageRecord))
}

// advance moves the fake clock from timer to timer until d has passed.
func (r *diskRig) advance(d time.Duration) {
	r.t.Helper()
	end := r.clk.Now().Add(d)
	for r.clk.Now().Before(end) {
		at, ok := r.clk.WaitTimer(r.clk.Now(), 2*time.Second)
		if !ok || at.After(end) {
			at = end
		}
		r.clk.Set(at)
	}
}

// queued counts the messages still in the queue.
func (r *diskRig) queued() int {
	msgs, _, err := r.store.Admin().List(queue.ListOptions{Limit: 1000})
	if err != nil {
		r.t.Fatal(err)
	}
	return len(msgs)
}

func (o *storageObserver) count(op StorageOp) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.errors[op]
}

func subjectOf(data []byte) string {
	for _, l := range strings.Split(string(data), "\r\n") {
		if s, ok := strings.CutPrefix(l, "Subject: "); ok {
			return s
		}
	}
	return ""
}
