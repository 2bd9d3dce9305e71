package delivery

import (
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
)

// A destination's queue keeps forced jobs first; the message is in
// memory until its last job leaves; a destination with nothing to
// remember is forgotten, its earned window kept warm for warmFor.
func TestSchedStateEnqueueForgetWarm(t *testing.T) {
	s := newSchedState(32)
	s.enqueue(&job{id: "a", dest: "d"}, t0)
	s.enqueue(&job{id: "b", dest: "d"}, t0)
	s.enqueue(&job{id: "a", dest: "e"}, t0)
	s.markForced(map[string]bool{"b": true}, false)
	d := s.dests["d"]
	if d.queue[0].id != "b" || !d.queue[0].force || !s.forceIDs["b"] {
		t.Fatalf("forced job not first: %v", d.queue[0])
	}
	if s.pending != 3 || s.busy["a"] != 2 || !s.inMemory("b") {
		t.Fatalf("pending %d busy %v", s.pending, s.busy)
	}
	s.unbusy("a")
	s.unbusy("a")
	if s.inMemory("a") {
		t.Fatal("a still in memory after its last job")
	}
	d.queue, d.window = nil, 7
	s.forget(d, t0)
	if _, ok := s.dests["d"]; ok {
		t.Fatal("an idle destination was kept")
	}
	if w := s.warmWindow("d", t0.Add(time.Minute)); w != 7 {
		t.Fatalf("window %d within warmFor, want the earned 7", w)
	}
	s.keepWarm(&dest{name: "d", window: 7}, t0)
	if w := s.warmWindow("d", t0.Add(warmFor)); w != initialWindow {
		t.Fatalf("window %d after warmFor, want the slow start", w)
	}
}

// A suspended destination gets one probe; otherwise the slow-start window
// and an even share of the workers bound it.
func TestSchedStateLimits(t *testing.T) {
	s := newSchedState(32)
	if got := s.limitOf(&dest{strikes: 1, window: 10}, 32); got != 1 {
		t.Fatalf("suspended limit %d, want 1", got)
	}
	if got := s.limitOf(&dest{}, 32); got != initialWindow {
		t.Fatalf("new destination limit %d, want %d", got, initialWindow)
	}
	if got := s.limitOf(&dest{window: 20}, s.share(4)); got != 8 {
		t.Fatalf("limit %d with four destinations, want a share of 8", got)
	}
	if got := s.share(100); got != initialWindow {
		t.Fatalf("share %d among 100, want the slow-start floor", got)
	}
}

// A scope refused once in a start call answers for the others it bounds;
// a forced job is held back by a connection refusal only.
func TestSchedStateRefusedScope(t *testing.T) {
	s := newSchedState(32)
	sc := shaping.Scope{Kind: shaping.ScopeProvider, Name: "p"}
	target := shaping.Target{Bounds: []shaping.Bound{{Scope: sc}}}
	if _, ok := s.refusedScope(target, false); ok {
		t.Fatal("refused before any refusal")
	}
	s.refusals[sc] = shaping.Wait{Scope: sc, Reason: shaping.WaitRate}
	if _, ok := s.refusedScope(target, false); !ok {
		t.Fatal("a rate refusal does not answer for the scope")
	}
	if _, ok := s.refusedScope(target, true); ok {
		t.Fatal("a rate refusal holds back a forced job")
	}
}
