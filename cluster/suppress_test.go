package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
)

// sharedList is one node's suppression list: its own queue file, shared
// through node n.
func sharedList(t *testing.T, n *Node) (*suppression.List, *Suppressions, *queue.Store) {
	t.Helper()
	st := queuetest.NewStore(t, nil)
	s := NewSuppressions(n, st.Suppressions(), nil)
	st.Suppressions().SetAutoHook(s.Auto)
	t.Cleanup(func() { s.Close(); st.Close() })
	return &suppression.List{Store: s}, s, st
}

// refusedSoon waits (boundedly) until l refuses (or, with want false,
// accepts) mail to addr.
func refusedSoon(t *testing.T, l *suppression.List, addr string, want bool, what string) {
	t.Helper()
	if !waitfor.Within(2*time.Second, func() bool {
		_, ok, err := l.Check(identity.Sender{}, addr, false, false)
		return err == nil && ok == want
	}) {
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

	if err := sa.Add(suppression.Entry{Address: "Gone@Example.com", Reply: "550 5.1.1 no such user", Source: "api"}); err != nil {
		t.Fatal(err)
	}
	refusedSoon(t, la, "gone@example.com", true, "a, where it was added")
	refusedSoon(t, lb, "gone@example.com", true, "b")
	e, _, _ := lb.Lookup("gone@example.com")
	if e.Reply != "550 5.1.1 no such user" || e.Source != "api" {
		t.Errorf("b's copy: %+v", e)
	}

	if found, err := lb.Store.Remove("GONE@example.com"); err != nil || !found {
		t.Fatalf("unsuppress on b: %v, %v", found, err)
	}
	refusedSoon(t, la, "gone@example.com", false, "a, after b removed it")

	old := suppression.Entry{Address: "old@example.com", Since: time.Now().Add(-48 * time.Hour), Source: "import"}
	if err := sa.Add(old); err != nil {
		t.Fatal(err)
	}
	lb.SetConfig(suppression.Config{Expire: 24 * time.Hour})
	if !waitfor.Within(2*time.Second, func() bool { _, ok, _ := lb.Store.Get("old@example.com"); return ok }) {
		t.Fatal("b never got the imported entry")
	}
	if _, ok, _ := lb.Check(identity.Sender{}, "old@example.com", false, false); ok {
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
	r := startRedis(t)
	a, alog := newNode(t, r, "a", nil)
	b, blog := newNode(t, r, "b", nil)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("a's log:\n%s\nb's log:\n%s", alog, blog)
		}
	})
	la, sa, _ := sharedList(t, a)
	lb, sb, _ := sharedList(t, b)
	if err := sb.Add(suppression.Entry{Address: "back@example.com", Source: "api"}); err != nil {
		t.Fatal(err)
	}
	refusedSoon(t, la, "back@example.com", true, "a, before the outage")
	r.stop()
	if !waitfor.Within(2*time.Second, func() bool { return !a.RedisUp() && !b.RedisUp() }) {
		t.Fatal("the nodes did not notice that Redis is down")
	}
	if err := sa.Add(suppression.Entry{Address: "during@example.com", Source: "api"}); err != nil {
		t.Fatalf("suppress with Redis down: %v", err)
	}
	refusedSoon(t, la, "during@example.com", true, "a, with Redis down")
	if _, err := sa.Remove("back@example.com"); err != nil {
		t.Fatal(err)
	}
	refusedSoon(t, la, "back@example.com", false, "a, removed with Redis down")
	r.start()
	refusedSoon(t, lb, "during@example.com", true, "b, once Redis is back")
	refusedSoon(t, lb, "back@example.com", false, "b, once Redis is back")
	refusedSoon(t, la, "back@example.com", false, "a, after the merge")
}

// An import larger than one script's share (supChunk) reaches the other
// nodes whole.
func TestLargeSuppressionImportReachesOtherNodes(t *testing.T) {
	_, n := cluster(t, nil, "a", "b")
	_, sa, _ := sharedList(t, n[0])
	lb, _, _ := sharedList(t, n[1])
	var es []suppression.Entry
	for i := 0; i < 2*supChunk+7; i++ {
		es = append(es, suppression.Entry{Address: fmt.Sprintf("user%d@example.net", i), Source: "import"})
	}
	if err := sa.Add(es...); err != nil {
		t.Fatal(err)
	}
	var got int
	if !waitfor.Within(5*time.Second, func() bool { all, err := lb.Entries(); got = len(all); return err == nil && got == len(es) }) {
		t.Fatalf("b lists %d of the %d imported on a", got, len(es))
	}
}

// Redis restarted empty before any node noticed, its version brought back
// to the number the nodes last saw: they see a new epoch and send their
// lists again, so a node that joins afterwards gets
// the entries added before the restart.
func TestSuppressionListSurvivesRedisRestart(t *testing.T) {
	r := startRedis(t)
	a, _ := newNode(t, r, "a", nil)
	b, _ := newNode(t, r, "b", nil)
	la, sa, _ := sharedList(t, a)
	lb, _, _ := sharedList(t, b)
	if err := sa.Add(suppression.Entry{Address: "before@example.com", Source: "api"}); err != nil {
		t.Fatal(err)
	}
	refusedSoon(t, lb, "before@example.com", true, "b, before the restart")
	r.stop()
	r.start()
	// The version the nodes last saw (one change), as if changes made
	// since the restart had brought it there: only the epoch tells.
	if line, err := r.probe("SET", Prefix+"sup:version", "1"); err != nil || line != "+OK" {
		t.Fatalf("SET version: %q %v", line, err)
	}
	c, _ := newNode(t, r, "c", nil)
	lc, sc, _ := sharedList(t, c)
	refusedSoon(t, lc, "before@example.com", true, "c, joined after the restart")
	if err := sc.Add(suppression.Entry{Address: "after@example.com", Source: "api"}); err != nil {
		t.Fatal(err)
	}
	refusedSoon(t, la, "after@example.com", true, "a, added on c after the restart")
}
