package cluster

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/suppression"
)

// sharedList is one node's suppression list: its own queue file, shared
// through node n.
func sharedList(t *testing.T, n *Node) (*suppression.List, *Suppressions, *queue.Store) {
	t.Helper()
	st, err := queue.Open(filepath.Join(t.TempDir(), "queue.db"), queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := NewSuppressions(n, st, nil)
	st.SetAutoSuppressHook(s.Auto)
	t.Cleanup(func() { s.Close(); st.Close() })
	return &suppression.List{Store: s}, s, st
}

// refusedSoon waits (boundedly) until l refuses (or, with want false,
// accepts) mail to addr.
func refusedSoon(t *testing.T, l *suppression.List, addr string, want bool, what string) {
	t.Helper()
	if !poll(2*time.Second, func() bool { _, ok, err := l.Check(addr, false, false); return err == nil && ok == want }) {
		t.Fatalf("%s: %s refused: want %v for 2s", what, addr, want)
	}
}

// An address suppressed on one node (operator, import or bounce) is
// refused on the others; removed on one, it is accepted on all; the
// configured expiry applies to entries that came from another node.
func TestSuppressionSharedAcrossNodes(t *testing.T) {
	_, n := cluster(t, nil, "a", "b")
	la, sa, _ := sharedList(t, n[0])
	lb, _, _ := sharedList(t, n[1])

	if err := sa.Suppress(suppression.Entry{Address: "Gone@Example.com", Reply: "550 5.1.1 no such user", Source: "api"}); err != nil {
		t.Fatal(err)
	}
	refusedSoon(t, la, "gone@example.com", true, "a, where it was added")
	refusedSoon(t, lb, "gone@example.com", true, "b")
	e, _, _ := lb.Lookup("gone@example.com")
	if e.Reply != "550 5.1.1 no such user" || e.Source != "api" {
		t.Errorf("b's copy: %+v", e)
	}

	if found, err := lb.Store.Unsuppress("GONE@example.com"); err != nil || !found {
		t.Fatalf("unsuppress on b: %v, %v", found, err)
	}
	refusedSoon(t, la, "gone@example.com", false, "a, after b removed it")

	old := suppression.Entry{Address: "old@example.com", Since: time.Now().Add(-48 * time.Hour), Source: "import"}
	if err := sa.Suppress(old); err != nil {
		t.Fatal(err)
	}
	lb.SetConfig(suppression.Config{Expire: 24 * time.Hour})
	if !poll(2*time.Second, func() bool { _, ok, _ := lb.Store.Suppressed("old@example.com"); return ok }) {
		t.Fatal("b never got the imported entry")
	}
	if _, ok, _ := lb.Check("old@example.com", false, false); ok {
		t.Error("b refuses an entry added 48h ago with suppression.expire 24h")
	}
}

// A bounce the queue records with Suppress (delivery's auto-add, through
// the queue's hook) reaches the other nodes.
func TestAutoSuppressionReachesOtherNodes(t *testing.T) {
	_, n := cluster(t, nil, "a", "b")
	_, _, qa := sharedList(t, n[0])
	lb, _, _ := sharedList(t, n[1])
	d := qa.NewDraft()
	d.Write([]byte("Subject: hi\r\n\r\nbody\r\n"))
	if err := d.Commit(queue.Envelope{From: "app@example.org", Recipients: []queue.Recipient{{Address: "Nobody@example.org"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := qa.Record(d.ID(), []queue.Outcome{{Address: "Nobody@example.org", Status: queue.StatusBounced,
		Reply: "550 5.1.1 unknown", RemoteMTA: "mx.example.org", Suppress: true}}); err != nil {
		t.Fatal(err)
	}
	refusedSoon(t, lb, "nobody@example.org", true, "b, after a's bounce")
	e, _, _ := lb.Lookup("nobody@example.org")
	if e.Source != "auto" || e.Reply != "550 5.1.1 unknown" {
		t.Errorf("b's copy: %+v", e)
	}
}

// Redis down: changes stay local and wait; Redis back: they reach the
// other nodes, and a removal made meanwhile on one node beats an older
// addition.
func TestSuppressionsDuringOutageReachOthersAfter(t *testing.T) {
	r, n := cluster(t, nil, "a", "b")
	la, sa, _ := sharedList(t, n[0])
	lb, sb, _ := sharedList(t, n[1])
	if err := sb.Suppress(suppression.Entry{Address: "back@example.com", Source: "api"}); err != nil {
		t.Fatal(err)
	}
	refusedSoon(t, la, "back@example.com", true, "a, before the outage")
	r.stop()
	if err := sa.Suppress(suppression.Entry{Address: "during@example.com", Source: "api"}); err != nil {
		t.Fatalf("suppress with Redis down: %v", err)
	}
	refusedSoon(t, la, "during@example.com", true, "a, with Redis down")
	if _, err := sa.Unsuppress("back@example.com"); err != nil {
		t.Fatal(err)
	}
	refusedSoon(t, la, "back@example.com", false, "a, removed with Redis down")
	r.start()
	refusedSoon(t, lb, "during@example.com", true, "b, once Redis is back")
	refusedSoon(t, lb, "back@example.com", false, "b, once Redis is back")
	refusedSoon(t, la, "back@example.com", false, "a, after the merge")
}
