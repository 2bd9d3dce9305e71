package delivery

import (
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/queue"
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
	plain, forced := &job{}, &job{force: true}
	if _, ok := s.refusedScope(target, plain); ok {
		t.Fatal("refused before any refusal")
	}
	s.refused(shaping.Wait{Scope: sc, Reason: shaping.WaitRate}, plain)
	if _, ok := s.refusedScope(target, plain); !ok {
		t.Fatal("a rate refusal does not answer for the scope")
	}
	if _, ok := s.refusedScope(target, forced); ok {
		t.Fatal("a rate refusal holds back a forced job")
	}
	// Another stream asks for itself, so shaping hears that it waits.
	if _, ok := s.refusedScope(target, &job{lane: laneOf(1, false)}); ok {
		t.Fatal("a refusal of one stream answers for another")
	}
}

// domainRouter names each domain its own destination; nothing else of
// routing is asked of it.
type domainRouter struct{ Router }

func (domainRouter) Destination(domain string) string { return domain }

// loadEnvelope makes one job per destination of a message's due
// recipients and puts the part for a suspended destination aside to be
// moved forward (the message has other destinations: it cannot be parked
// by tag); parkable takes a suspended destination's waiting jobs out of
// memory, forced ones excepted.
func TestSchedStateLoadsAndParks(t *testing.T) {
	s := newSchedState(4)
	s.dests["down.example"] = &dest{name: "down.example", until: t0.Add(time.Hour)}
	set := &Settings{Router: domainRouter{}, Policy: defaultPolicy()}
	env := &queue.Envelope{ID: "m1", Created: t0, Recipients: []queue.Recipient{
		{Address: "a@up.example"}, {Address: "b@down.example"}, {Address: "c@up.example"},
		{Address: "d@up.example", NextAttempt: t0.Add(time.Minute)},
	}}
	postpone := postponements{}
	s.loadEnvelope(set, env, t0, postpone, false)
	up := s.dests["up.example"]
	if up == nil || len(up.queue) != 1 || strings.Join(up.queue[0].addrs, ",") != "a@up.example,c@up.example" {
		t.Fatalf("up.example's queue: %+v", up)
	}
	if got := postpone["down.example"].move["m1"]; len(got) != 1 || got[0] != "b@down.example" {
		t.Fatalf("postponed %v", postpone)
	}
	if s.pending != 1 || !s.inMemory("m1") {
		t.Fatalf("pending %d, in memory %v", s.pending, s.inMemory("m1"))
	}
	up.queue = append(up.queue, &job{id: "m2", addrs: []string{"e@up.example"}, force: true})
	s.busy["m2"]++
	s.pending++
	p := s.parkable(set, up)
	if len(up.queue) != 1 || up.queue[0].id != "m2" || len(p["up.example"].move["m1"]) != 2 || s.inMemory("m1") || s.pending != 1 {
		t.Fatalf("after parkable: queue %d, parked %v, pending %d", len(up.queue), p, s.pending)
	}
	s.booked(result{job: up.queue[0], recorded: true})
	if s.inMemory("m2") {
		t.Fatal("a booked job's message stays in memory")
	}
}
