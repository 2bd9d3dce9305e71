package delivery

import (
	"sync"
	"testing"
	"time"
)

// index is a fake schedule index for the cursor: it counts reads and
// answers with the entry it holds.
type index struct {
	at    time.Time
	id    string
	ok    bool
	reads int
	from  time.Time // the position of the last read
}

func (x *index) read(from time.Time) (time.Time, string, bool) {
	x.reads++
	x.from = from
	return x.at, x.id, x.ok
}

var c0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestCursorScanPosition(t *testing.T) {
	var c cursor
	if got := c.start(); !got.IsZero() {
		t.Fatalf("zero cursor starts at %v, want the beginning", got)
	}
	c.scanned(c0.Add(time.Minute))
	c.scanned(c0) // an older complete scan says nothing new
	if got := c.start(); !got.Equal(c0.Add(time.Minute)) {
		t.Fatalf("after scans up to c0+1m: start %v", got)
	}
	c.rewind(time.Time{}) // nothing written
	c.rewind(c0.Add(2 * time.Minute))
	if got := c.start(); !got.Equal(c0.Add(time.Minute)) {
		t.Fatalf("a write due after the position moved it: start %v", got)
	}
	c.rewind(c0.Add(30 * time.Second))
	if got := c.start(); !got.Equal(c0.Add(30 * time.Second)) {
		t.Fatalf("a write due before the position did not move it back: start %v", got)
	}
	c.reset()
	if got := c.start(); !got.IsZero() {
		t.Fatalf("after reset: start %v, want the beginning", got)
	}
}

func TestCursorReadsTheIndexOnlyWhenItMustKnow(t *testing.T) {
	var c cursor
	x := &index{at: c0.Add(time.Hour), id: "A", ok: true}
	c.scanned(c0)

	if at, ok := c.wake(c0, x.read); !ok || !at.Equal(c0.Add(time.Hour)) || x.reads != 1 || !x.from.Equal(c0) {
		t.Fatalf("first wake: %v %v after %d reads from %v", at, ok, x.reads, x.from)
	}
	// Known and not yet due: no read.
	c.wake(c0.Add(time.Minute), x.read)
	if x.reads != 1 {
		t.Fatalf("wake read the index again before its time (%d reads)", x.reads)
	}
	// Something the scheduler wrote itself comes earlier: no read either.
	c.expect(c0.Add(10 * time.Minute))
	c.expect(c0.Add(20 * time.Minute)) // later: changes nothing
	c.expect(time.Time{})
	if at, _ := c.wake(c0.Add(time.Minute), x.read); !at.Equal(c0.Add(10*time.Minute)) || x.reads != 1 {
		t.Fatalf("after expect: wake %v with %d reads, want c0+10m and no read", at, x.reads)
	}
	// Its time has come: read.
	c.wake(c0.Add(10*time.Minute), x.read)
	if x.reads != 2 {
		t.Fatalf("due time reached without a read (%d reads)", x.reads)
	}
	// Another message in memory says nothing; the one next was for does.
	c.loaded("B")
	c.wake(c0.Add(11*time.Minute), x.read)
	if x.reads != 2 {
		t.Fatalf("loading another message made wake read (%d reads)", x.reads)
	}
	c.loaded("A")
	c.wake(c0.Add(11*time.Minute), x.read)
	if x.reads != 3 {
		t.Fatalf("loading the next message did not make wake read (%d reads)", x.reads)
	}
	c.forget()
	c.wake(c0.Add(11*time.Minute), x.read)
	if x.reads != 4 {
		t.Fatalf("forget did not make wake read (%d reads)", x.reads)
	}
}

func TestCursorNothingOnDisk(t *testing.T) {
	var c cursor
	x := &index{}
	if _, ok := c.wake(c0, x.read); ok {
		t.Fatal("empty index: wake says something is due")
	}
	c.wake(c0.Add(time.Hour), x.read)
	if x.reads != 1 {
		t.Fatalf("empty index read %d times, want once until told otherwise", x.reads)
	}
	c.expect(c0.Add(time.Minute))
	if at, ok := c.wake(c0, x.read); !ok || !at.Equal(c0.Add(time.Minute)) {
		t.Fatalf("after expect: %v %v", at, ok)
	}
}

// reset may come from any goroutine (Kick) while the scheduler works.
func TestCursorResetFromOtherGoroutines(t *testing.T) {
	var c cursor
	x := &index{}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				c.reset()
			}
		}()
	}
	for j := 0; j < 100; j++ {
		c.scanned(c0.Add(time.Duration(j) * time.Second))
		c.start()
		c.wake(c0, x.read)
	}
	wg.Wait()
	// The loop above may scan after the others' last reset; a Kick after
	// that scan must still be seen.
	c.reset()
	if got := c.start(); !got.IsZero() {
		t.Fatalf("after the last reset: start %v", got)
	}
}

// quiet says a scan would load nothing only while the cursor knows the
// earliest entry outside memory and it is not yet due.
func TestCursorQuiet(t *testing.T) {
	var c cursor
	c.start()
	if c.quiet(c0) {
		t.Fatal("a cursor that knows nothing is quiet")
	}
	x := &index{}
	c.wake(c0, x.read) // the index holds nothing outside memory
	if !c.quiet(c0) {
		t.Fatal("nothing on disk outside memory, yet not quiet")
	}
	c.expect(c0.Add(time.Minute)) // a deferral written for a minute later
	if !c.quiet(c0.Add(59*time.Second)) || c.quiet(c0.Add(time.Minute)) {
		t.Fatal("quiet must hold until the written entry is due, and end then")
	}
	c.reset() // an operator's retry, from another goroutine
	if c.quiet(c0) {
		t.Fatal("quiet after a reset")
	}
	c.start()
	if c.quiet(c0) {
		t.Fatal("quiet after the reset applied: the index must be read again")
	}
	x.at, x.id, x.ok = c0.Add(time.Hour), "A", true
	c.wake(c0, x.read)
	if !c.quiet(c0) {
		t.Fatal("the next entry is an hour away, yet not quiet")
	}
	c.loaded("A")
	if c.quiet(c0) {
		t.Fatal("the entry the cursor knew was loaded: it knows nothing now")
	}
}
