package delivery

import "testing"

// wake and offer never block: a full inbox drops the kick (the scheduler
// has events waiting anyway) and refuses the offer; post waits for room.
func TestInboxNeverBlocksOutsiders(t *testing.T) {
	in := make(inbox, 1)
	if !in.offer(event{kind: eventArrived}) {
		t.Fatal("an empty inbox refused an offer")
	}
	in.wake()
	if in.offer(event{kind: eventArrived}) {
		t.Fatal("a full inbox took an offer")
	}
	if ev := <-in; ev.kind != eventArrived {
		t.Fatalf("got event %v, want the offered one", ev.kind)
	}
	in.wake()
	done := make(chan struct{})
	go func() { in.post(event{kind: eventFreed}); close(done) }()
	if ev := <-in; ev.kind != eventKick {
		t.Fatalf("got event %v, want the kick", ev.kind)
	}
	<-done
	if ev := <-in; ev.kind != eventFreed {
		t.Fatalf("got event %v, want the posted one", ev.kind)
	}
}
