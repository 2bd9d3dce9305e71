package e2e

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtptest"
)

// Queue-file damage: a damaged file must never
// crash relayq, and damaged mail must never go out altered.

// sizedMessage is a message carrying tok of about size bytes: small ones
// are stored whole, large ones in several checksummed chunks.
func sizedMessage(tok string, size int) string {
	var b strings.Builder
	b.WriteString("From: app@example.org\r\nTo: rcpt@example.net\r\nDate: Mon, 30 Nov 2026 12:00:00 +0000\r\nMessage-ID: <" + tok + "@e2e.test>\r\nSubject: " + tok + "\r\n\r\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%s line %06d of a message that must arrive exactly as sent\r\n", tok, i)
	}
	return b.String()
}

// queuedAs finds the queue ID in a 250 reply.
var queuedAs = regexp.MustCompile(`queued as ([0-9A-F]+)`)

// quarantinedLog finds the ID in the relay's quarantine log lines (quoted
// when damage made it more than hex digits).
var quarantinedLog = regexp.MustCompile(`moved to quarantine.* id=("(?:[^"\\]|\\.)*"|\S+)`)

// fillLiveQueue submits n messages of assorted sizes to a relay whose next
// hop does not answer, kills it (SIGKILL: the file is left as a crash
// leaves it) and returns the file and what was queued: token -> ID, and
// token -> message.
func fillLiveQueue(t *testing.T, n int) (file string, ids, msgs map[string]string) {
	t.Helper()
	dead := smtptest.DownAddr(t) // nobody listens: every attempt is deferred
	r := startRelay(t, dead, withRetry("retry:\n  initial_delay: 2s\n  max_delay: 2s\n  jitter: 100ms\n"))
	c, err := dialClient(r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	ids, msgs = map[string]string{}, map[string]string{}
	sizes := []int{300, 30 << 10, 300 << 10, 2<<20 + 5000}
	for i := range n {
		tok := fmt.Sprintf("tok-dmg-%03d", i)
		msg := sizedMessage(tok, sizes[i%len(sizes)])
		o, line, err := c.send("app@example.org", "rcpt@example.net", msg, nil)
		m := queuedAs.FindStringSubmatch(line)
		if o != accepted || m == nil {
			t.Fatalf("message %d: %v %q %v", i, o, line, err)
		}
		ids[tok], msgs[tok] = m[1], msg
	}
	r.kill()
	return filepath.Join(r.dir, "queue.db"), ids, msgs
}

// flipBytes copies src to dst with n random bytes past the meta pages
// changed; with inTree, only bytes of b+tree pages (branch and leaf page
// headers, elements and keys: the file's structure, where bodies are not).
func flipBytes(t *testing.T, src, dst string, rng *rand.Rand, n int, inTree bool) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	var tree []int
	for off := 2 * page; off+page <= len(b); off += page {
		id := binary.LittleEndian.Uint64(b[off:])
		flags := binary.LittleEndian.Uint16(b[off+8:])
		if id == uint64(off/page) && (flags == 0x01 || flags == 0x02) {
			tree = append(tree, off)
		}
	}
	for range n {
		if inTree && len(tree) > 0 {
			b[tree[rng.Intn(len(tree))]+rng.Intn(page)] ^= byte(1 + rng.Intn(255))
			continue
		}
		b[2*page+rng.Intn(len(b)-2*page)] ^= byte(1 + rng.Intn(255))
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// exitState waits for the current process, which has exited or is about
// to (a refused start), returns how it ended and forgets it, so the relay
// can be started again.
func (r *relay) exitState() *os.ProcessState {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		return nil
	}
	r.kill()
	return cmd.ProcessState
}

// checkReport is the part of `relayq queue check --json` these tests read.
type checkReport struct {
	Structure  []string `json:"structure"`
	Messages   int      `json:"messages"`
	Quarantine []struct {
		ID string `json:"id"`
	} `json:"quarantine"`
}

// refusedCleanly asserts that a start on a damaged file ended with exit
// code 3 (a supervisor need not restart it) and the one advertised line,
// not a crash.
func refusedCleanly(t *testing.T, r *relay, startErr error) {
	t.Helper()
	code := -1
	if st := r.exitState(); st != nil {
		code = st.ExitCode()
	}
	out := r.log.tail()
	if code != 3 || !strings.Contains(out, "relayq: queue file damaged: ") || !strings.Contains(out, "; run `relayq queue check`") {
		t.Fatalf("start on a damaged file: exit %d, %v\n%s", code, startErr, out)
	}
	for _, crash := range []string{"panic", "SIGSEGV", "SIGBUS", "goroutine ", "fatal error"} {
		if strings.Contains(out, crash) {
			t.Fatalf("relayq crashed (%q) on a damaged file:\n%s", crash, out)
		}
	}
}

// TestTruncatedQueueFileIsRefused: `truncate -s 50% queue.db` made relayq
// die of SIGSEGV inside bbolt (exit 2, restarted forever by a
// supervisor). It must refuse to start with one clear line and exit code
// 3, `relayq queue check` must say what is wrong, and salvage must give a
// file it starts on.
func TestTruncatedQueueFileIsRefused(t *testing.T) {
	live, _, _ := fillLiveQueue(t, 8)
	r := newRelay(t, smtptest.DownAddr(t), "", "")
	b, err := os.ReadFile(live)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "queue.db"), b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	err = r.start()
	if err == nil {
		t.Fatal("relayq started on a queue file cut in half")
	}
	refusedCleanly(t, r, err)

	out, code := runRelayq(t, nil, "queue", "check", "--config", r.cfgPath)
	if code != 1 || !strings.Contains(out, "structure: DAMAGED") || !strings.Contains(out, "truncated") {
		t.Errorf("queue check: exit %d\n%s", code, out)
	}
	salvaged := filepath.Join(r.dir, "salvaged.db")
	out, code = runRelayq(t, nil, "queue", "salvage", "--config", r.cfgPath, "--to", salvaged)
	if code != 0 || !strings.Contains(out, "salvaged ") {
		t.Fatalf("queue salvage: exit %d\n%s", code, out)
	}
	t.Logf("salvage:\n%s", out)
	if err := os.Rename(salvaged, filepath.Join(r.dir, "queue.db")); err != nil {
		t.Fatal(err)
	}
	if err := r.start(); err != nil {
		t.Fatalf("relayq does not start on the salvaged file: %v", err)
	}
}

// TestCorruptionRound flips random bytes in copies of a live queue file
// (one a relay was SIGKILLed on, holding small, inline and multi-chunk
// messages) and starts relayq on each: it either refuses with the one
// line (then the file is salvaged and it starts on the copy) or starts;
// every message then either goes out byte-identical or is quarantined,
// never altered.
func TestCorruptionRound(t *testing.T) {
	rng := seededRand(t, "damage")
	live, ids, msgs := fillLiveQueue(t, 24)
	ours := map[string]bool{}
	for _, id := range ids {
		ours[id] = true
	}
	for round := range 6 {
		d := &damageRound{t: t, n: round, ids: ids, ours: ours, msgs: msgs, delivered: map[string][]byte{}}
		mx := smtptest.NewServer(t, smtptest.DiscardEvents(), smtptest.OnMessage(func(m smtptest.Message) {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.delivered[tokenOf(m.Data)] = bytes.Clone(m.Data)
		}))
		// The SIGTERM below waits 10 s: the relay's own bound on a stop
		// (an outcome a damaged page refused stays in memory until then)
		// must be shorter, not the default 30 s.
		d.r = newRelay(t, mx.Addr(), "", "shutdown_timeout: 5s\n")
		// Rounds 0-2 damage anywhere (mostly bodies), 3-5 the structure.
		flipBytes(t, live, filepath.Join(d.r.dir, "queue.db"), rng, 10+rng.Intn(60), round >= 3)
		d.start()
		waitfor.Within(20*time.Second, d.settled)
		if code, err := d.r.term(10 * time.Second); err != nil || code != 0 {
			t.Errorf("round %d: SIGTERM: exit %d, %v", round, code, err)
		}
		d.account()
	}
}

// damageRound is one start of relayq on a damaged copy of the live queue.
type damageRound struct {
	t         *testing.T
	n         int
	r         *relay
	ids, msgs map[string]string // token -> queue ID, token -> message
	ours      map[string]bool   // the queue IDs
	// salvaged: relayq refused the file and runs on a salvaged copy
	// holding salvagedLive messages.
	salvaged     bool
	salvagedLive int

	mu        sync.Mutex
	delivered map[string][]byte // token -> what the next hop got
}

// start starts relayq on the damaged file; if it refuses (cleanly), the
// file is salvaged and relayq started on the copy.
func (d *damageRound) start() {
	t, r := d.t, d.r
	err := r.start()
	if err == nil {
		return
	}
	refusedCleanly(t, r, err)
	file := filepath.Join(r.dir, "queue.db")
	out, code := runRelayq(t, nil, "queue", "salvage", "--config", r.cfgPath, "--to", file+".salvaged", "--json")
	var rep struct {
		Messages int `json:"messages"`
	}
	if code != 0 || json.NewDecoder(strings.NewReader(out)).Decode(&rep) != nil {
		t.Fatalf("round %d: salvage: exit %d\n%s", d.n, code, out)
	}
	if err := os.Rename(file+".salvaged", file); err != nil {
		t.Fatal(err)
	}
	if err := r.start(); err != nil {
		t.Fatalf("round %d: no start on the salvaged file: %v", d.n, err)
	}
	d.salvaged, d.salvagedLive = true, rep.Messages
}

// settled reports whether every message is delivered or quarantined as
// far as the log tells; one quarantined under a damaged ID counts for any.
func (d *damageRound) settled() bool {
	q, foreign := map[string]bool{}, 0
	for _, m := range quarantinedLog.FindAllStringSubmatch(d.r.log.tail(), -1) {
		if !q[m[1]] && !d.ours[m[1]] {
			foreign++
		}
		q[m[1]] = true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.salvaged {
		// The salvage quarantined what it found damaged; what it kept is
		// delivered or quarantined by this run.
		return len(d.delivered)+len(q) >= d.salvagedLive
	}
	open := 0
	for tok, id := range d.ids {
		if d.delivered[tok] == nil && !q[id] {
			open++
		}
	}
	return open <= foreign
}

// account checks, with the relay stopped, that every message went out
// byte-identical or is in the quarantine, and nothing is left queued.
func (d *damageRound) account() {
	t, round := d.t, d.n
	out, _ := runRelayq(t, nil, "queue", "check", "--config", d.r.cfgPath, "--json")
	var rep checkReport
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&rep); err != nil {
		t.Fatalf("round %d: check --json: %v\n%s", round, err, out)
	}
	quarantined := map[string]bool{}
	for _, q := range rep.Quarantine {
		quarantined[q.ID] = true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var sent, held, unaccounted int
	for tok, id := range d.ids {
		switch got := d.delivered[tok]; {
		case got != nil:
			sent++
			if !bytes.HasSuffix(got, []byte(d.msgs[tok])) || tokenOf(got) != tok {
				t.Errorf("round %d: %s (%s) went out ALTERED", round, tok, id)
			}
			if quarantined[id] {
				t.Errorf("round %d: %s both delivered and quarantined", round, tok)
			}
		case quarantined[id]:
			held++
		default:
			unaccounted++
		}
	}
	for tok := range d.delivered {
		if _, ok := d.ids[tok]; !ok {
			t.Errorf("round %d: delivered a message nobody sent (token %q)", round, tok)
		}
	}
	// A message whose ID (the key) was damaged is quarantined under the
	// damaged key; one on a page salvage could not read is gone with the
	// page, which salvage reported.
	foreign := len(rep.Quarantine) - held
	if unaccounted > foreign && !d.salvaged {
		t.Errorf("round %d: %d messages neither delivered nor quarantined (%d quarantined under damaged IDs)", round, unaccounted, foreign)
	}
	if rep.Messages != 0 {
		t.Errorf("round %d: %d messages still queued after the run", round, rep.Messages)
	}
	t.Logf("round %d: salvaged %v; delivered intact %d, quarantined %d, under damaged IDs %d, lost with unreadable pages %d",
		round, d.salvaged, sent, held, foreign, max(unaccounted-foreign, 0))
}
