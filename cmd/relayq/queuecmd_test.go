package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
)

// kicks counts scheduler wake-ups.
type kicks struct {
	mu sync.Mutex
	n  int
}

func (k *kicks) Kick() { k.mu.Lock(); k.n++; k.mu.Unlock() }

// relay is a real queue behind the real admin handler on a loopback server.
type relay struct {
	t     *testing.T
	clock *clock.Fake // shared by the store and the admin handler
	store *queue.Store
	url   string
	kicks *kicks
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func newRelay(t *testing.T, token string) *relay {
	t.Helper()
	clk := clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	st, err := queue.Open(filepath.Join(t.TempDir(), "queue.db"), queue.Options{Clock: clk, LockTimeout: 100 * time.Millisecond, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	k := &kicks{}
	ts := httptest.NewServer(admin.NewHandler(admin.Options{Store: st, Kicker: k, Token: token, Clock: clk, Logger: quietLog}))
	t.Cleanup(ts.Close)
	return &relay{t: t, clock: clk, store: st, url: ts.URL, kicks: k}
}

// enqueue commits a message with a 100-byte body.
func (r *relay) enqueue(from string, rcpts ...string) string {
	r.t.Helper()
	d := r.store.NewDraft()
	d.Write(bytes.Repeat([]byte("x"), 100))
	env := queue.Envelope{From: from}
	for _, a := range rcpts {
		env.Recipients = append(env.Recipients, queue.Recipient{Address: a})
	}
	if err := d.Commit(env); err != nil {
		r.t.Fatal(err)
	}
	r.clock.Advance(time.Minute)
	return d.ID()
}

// delivered commits a message from from to rcpt and records it delivered.
func (r *relay) delivered(from, rcpt string) string {
	r.t.Helper()
	id := r.enqueue(from, rcpt)
	if _, err := r.store.Record(id, []queue.Outcome{{Address: rcpt, Status: queue.StatusDelivered, Reply: "250 ok"}}); err != nil {
		r.t.Fatal(err)
	}
	return id
}

// deferAll records a greylisting failure for every recipient, next try in an hour.
func (r *relay) deferAll(id string) {
	r.t.Helper()
	m, _ := r.store.Get(id)
	now := r.clock.Now()
	var addrs []string
	var outs []queue.Outcome
	for _, rc := range m.Recipients {
		addrs = append(addrs, rc.Address)
		outs = append(outs, queue.Outcome{Address: rc.Address, Status: queue.StatusDeferred, NextAttempt: now.Add(time.Hour), Reply: "451 4.7.1 greylisted"})
	}
	if _, err := r.store.Claim(id, addrs, now, now.Add(time.Hour)); err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.store.Record(id, outs); err != nil {
		r.t.Fatal(err)
	}
}

// run executes `relayq queue args...` against the relay.
func (r *relay) run(args ...string) (string, error) {
	var out bytes.Buffer
	err := queueCmd(append(args, "--admin", r.url), &out)
	return out.String(), err
}

// mustRun is run that fails the test on error.
func (r *relay) mustRun(args ...string) string {
	r.t.Helper()
	out, err := r.run(args...)
	if err != nil {
		r.t.Fatalf("relayq queue %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func TestQueueListTable(t *testing.T) {
	r := newRelay(t, "")
	a := r.enqueue("app@example.org", "x@example.net", "y@gmail.com")
	r.deferAll(a)
	b := r.enqueue("", "postmaster@example.com")
	r.mustRun("hold", b)

	out := r.mustRun("list")
	t.Logf("\n%s", out)
	want := []string{
		"-Queue ID-             --Size-- ----Arrival Time---- -Sender-",
		"  -Status-- -Tries- ----Next Attempt---- -Recipient-",
		a + "        100 2025-03-01 12:00:00Z app@example.org",
		"  deferred        1 2025-03-01 13:01:00Z x@example.net",
		"                                         (451 4.7.1 greylisted)",
		"  deferred        1 2025-03-01 13:01:00Z y@gmail.com",
		b + "!       100 2025-03-01 12:01:00Z <>",
		"  queued          0 2025-03-01 12:01:00Z postmaster@example.com",
		"-- 200 bytes in 2 messages. (! = held)",
	}
	for _, line := range want {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("table lacks line %q", line)
		}
	}

	// Filters reach the API.
	out = r.mustRun("list", "--status", "held")
	if strings.Contains(out, a) || !strings.Contains(out, b) {
		t.Errorf("--status held:\n%s", out)
	}
	out = r.mustRun("list", "--domain", "gmail.com")
	if !strings.Contains(out, a) || strings.Contains(out, b) {
		t.Errorf("--domain gmail.com:\n%s", out)
	}
	// --limit shows one page and the cursor for the next.
	out = r.mustRun("list", "--limit", "1")
	if !strings.Contains(out, a) || strings.Contains(out, b+"!") || !strings.Contains(out, "--after "+a) {
		t.Errorf("--limit 1:\n%s", out)
	}
	out = r.mustRun("list", "--limit", "1", "--after", a)
	if strings.Contains(out, "app@example.org") || !strings.Contains(out, b) {
		t.Errorf("--after:\n%s", out)
	}
}

func TestQueueListJSON(t *testing.T) {
	r := newRelay(t, "")
	a := r.enqueue("app@example.org", "x@example.net")
	out := r.mustRun("list", "--json")
	var p admin.Page
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("--json output is not the API JSON: %v\n%s", err, out)
	}
	if len(p.Messages) != 1 || p.Messages[0].ID != a || p.Messages[0].Recipients[0].Address != "x@example.net" || p.Next != "" {
		t.Errorf("--json: %+v", p)
	}
	for _, key := range []string{`"messages"`, `"next"`, `"recipients"`, `"next_attempt"`} {
		if !strings.Contains(out, key) {
			t.Errorf("--json lacks %s", key)
		}
	}
	out = r.mustRun("show", a, "--json")
	var m admin.Message
	if err := json.Unmarshal([]byte(out), &m); err != nil || m.ID != a {
		t.Errorf("show --json: %v\n%s", err, out)
	}
}

func TestQueueEmpty(t *testing.T) {
	r := newRelay(t, "")
	if out := r.mustRun("list"); out != "Mail queue is empty\n" {
		t.Errorf("empty queue: %q", out)
	}
	if out := r.mustRun("list", "--status", "deferred"); out != "No messages match\n" {
		t.Errorf("empty filtered list: %q", out)
	}
	if out := r.mustRun("list", "--json"); !strings.Contains(out, `"messages": []`) {
		t.Errorf("empty --json: %q", out)
	}
}

func TestQueueActions(t *testing.T) {
	r := newRelay(t, "")
	a := r.enqueue("app@example.org", "x@example.net")
	r.deferAll(a)

	out := r.mustRun("show", a)
	for _, s := range []string{"ID:       " + a, "Held:     no", "x@example.net", "status:        deferred", "last reply:    451 4.7.1 greylisted"} {
		if !strings.Contains(out, s) {
			t.Errorf("show lacks %q:\n%s", s, out)
		}
	}
	if out := r.mustRun("retry", a); out != a+": waiting recipients due now\n" {
		t.Errorf("retry: %q", out)
	}
	if m, _ := r.store.Get(a); !m.Recipients[0].NextAttempt.Equal(r.clock.Now()) {
		t.Errorf("retry did not make the recipient due: %+v", m.Recipients[0])
	}
	if out := r.mustRun("hold", a); !strings.HasPrefix(out, a+": held") {
		t.Errorf("hold: %q", out)
	}
	if out := r.mustRun("release", a); !strings.HasPrefix(out, a+": released") {
		t.Errorf("release: %q", out)
	}
	r.deferAll(a)
	if out := r.mustRun("flush"); out != "flushed 1 message: waiting recipients are due now\n" {
		t.Errorf("flush: %q", out)
	}
	if out := r.mustRun("delete", a); out != a+": deleted\n" {
		t.Errorf("delete: %q", out)
	}
	if _, err := r.store.Get(a); err == nil {
		t.Error("message still stored after delete")
	}
	r.kicks.mu.Lock()
	defer r.kicks.mu.Unlock()
	if r.kicks.n != 3 { // retry, release, flush
		t.Errorf("scheduler kicked %d times, want 3", r.kicks.n)
	}
}

func TestQueueErrors(t *testing.T) {
	r := newRelay(t, "s3cret")
	id := "0000000000000000ABCD"

	_, err := r.run("list")
	if err == nil || !strings.Contains(err.Error(), "refused the request") || !strings.Contains(err.Error(), "--token") {
		t.Errorf("without token: %v", err)
	}
	_, err = r.run("show", id, "--token", "s3cret")
	if err == nil || err.Error() != "message "+id+" not found" {
		t.Errorf("unknown ID: %v", err)
	}
	t.Setenv("RELAYQ_ADMIN_TOKEN", "s3cret")
	if out := r.mustRun("list"); out != "Mail queue is empty\n" {
		t.Errorf("token from the environment: %q", out)
	}
	for _, args := range [][]string{{"frobnicate"}, {"show"}, {"retry", "a", "b"}, {"flush", "now"}, {"retry", id, "--status", "deferred"}, {}} {
		if _, err := r.run(args...); err == nil {
			t.Errorf("relayq queue %v: no error", args)
		}
	}
	_, err = r.run("list", "--status", "stuck")
	if err == nil || !strings.Contains(err.Error(), `bad status "stuck"`) {
		t.Errorf("bad status: %v", err)
	}

	// Nothing listening: one clear line naming the URL.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	t.Setenv("RELAYQ_ADMIN_URL", dead)
	var out bytes.Buffer
	err = queueCmd([]string{"list"}, &out)
	if err == nil || !regexp.MustCompile(`^cannot reach the admin API at `+regexp.QuoteMeta(dead)+`: .*connection refused$`).MatchString(err.Error()) {
		t.Errorf("dead admin URL from the environment: %v", err)
	}
}
