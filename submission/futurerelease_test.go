package submission

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
)

// holdT0 is the fake clock's start: now, as DATA's deadline is set on
// the real connection from the server's clock.
var holdT0 = time.Now().UTC().Truncate(time.Second)

// rfc3339 formats holdT0+d as HOLDUNTIL takes it.
func rfc3339(d time.Duration) string { return holdT0.Add(d).Format(time.RFC3339Nano) }

// startHolding runs a server with max_hold 168h on a fake clock.
func startHolding(t *testing.T, maxHold time.Duration) (*testEnv, *clock.Fake) {
	c := clock.NewFake(holdT0)
	return startServer(t, func(o *Options) { o.Clock, o.MaxHold = c, maxHold }), c
}

// ehlo returns every line of the EHLO reply.
func (r *rawConn) ehlo() []string {
	r.t.Helper()
	r.send("EHLO client.test\r\n")
	var lines []string
	for {
		line, err := r.r.ReadString('\n')
		if err != nil {
			r.t.Fatal(err)
		}
		lines = append(lines, strings.TrimRight(line, "\r\n"))
		if len(line) < 4 || line[3] != '-' {
			return lines
		}
	}
}

// holdFor submits a message with the MAIL parameter param and returns
// what the queue stored.
func holdFor(t *testing.T, env *testEnv, param string) queue.Envelope {
	t.Helper()
	c := rawDial(t, env.addr)
	c.ehlo()
	c.cmd("MAIL FROM:<a@example.org> "+param, "250")
	c.cmd("RCPT TO:<b@example.net>", "250")
	c.cmd("DATA", "354")
	id := queueIDFrom(t, c.cmd("Subject: later\r\n\r\nhi\r\n.", "250"))
	stored, err := env.store.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return *stored
}

// EHLO advertises FUTURERELEASE with max_hold in seconds and the latest
// release it allows (RFC 4865 section 3).
func TestEHLOAdvertisesFutureRelease(t *testing.T) {
	env, _ := startHolding(t, 168*time.Hour)
	want := "FUTURERELEASE 604800 " + holdT0.Add(168*time.Hour).Format("2006-01-02T15:04:05Z")
	if lines := rawDial(t, env.addr).ehlo(); !strings.Contains(strings.Join(lines, "\n"), want+"\n") && lines[len(lines)-1] != "250 "+want {
		t.Fatalf("EHLO:\n%s\nwant %s", strings.Join(lines, "\n"), want)
	}
	off := startServer(t, nil)
	c := rawDial(t, off.addr)
	if lines := c.ehlo(); strings.Contains(strings.Join(lines, "\n"), "FUTURERELEASE") {
		t.Fatalf("max_hold 0 still advertises FUTURERELEASE:\n%s", strings.Join(lines, "\n"))
	}
	c.cmd("MAIL FROM:<a@example.org> HOLDFOR=5", "504 5.5.4")
}

// HOLDFOR and HOLDUNTIL store the message scheduled at its release; a
// HOLDUNTIL in the past is no hold.
func TestHoldForAndHoldUntilSchedule(t *testing.T) {
	env, _ := startHolding(t, 168*time.Hour)
	for _, c := range []struct {
		param string
		want  time.Time
	}{
		{"HOLDFOR=5", holdT0.Add(5 * time.Second)},
		{"HOLDFOR=604800", holdT0.Add(168 * time.Hour)},
		{"HOLDUNTIL=" + holdT0.Add(23*time.Hour).In(time.FixedZone("", 3600)).Format(time.RFC3339), holdT0.Add(23 * time.Hour)},
		{"holduntil=" + strings.ToLower(rfc3339(90*time.Minute+500*time.Millisecond)), holdT0.Add(90*time.Minute + 500*time.Millisecond)},
		{"HOLDUNTIL=" + rfc3339(-24*time.Hour), time.Time{}},
		{"HOLDFOR=0", time.Time{}},
	} {
		got := holdFor(t, env, c.param)
		wantStatus := queue.StatusScheduled
		if c.want.IsZero() {
			wantStatus = queue.StatusQueued
		}
		if !got.Release.Equal(c.want) || got.Recipients[0].Status != wantStatus {
			t.Errorf("%s: release %v, %s; want %v, %s", c.param, got.Release, got.Recipients[0].Status, c.want, wantStatus)
		}
	}
}

// A hold beyond max_hold, a malformed value and both parameters at once
// are 501 5.5.4 (RFC 4865 section 3), and the session goes on.
func TestHoldOutOfRangeIs501(t *testing.T) {
	env, _ := startHolding(t, time.Hour)
	c := rawDial(t, env.addr)
	c.ehlo()
	for _, p := range []string{"HOLDFOR=3601", "HOLDUNTIL=" + rfc3339(time.Hour+time.Second), "HOLDFOR=-1", "HOLDFOR=1234567890",
		"HOLDFOR=5s", "HOLDUNTIL=tomorrow", "HOLDFOR=5 HOLDUNTIL=" + rfc3339(time.Minute)} {
		if got := c.cmd("MAIL FROM:<a@example.org> "+p, "501"); !strings.HasPrefix(got, "501 5.5.4 ") {
			t.Errorf("%s: %q, want 501 5.5.4", p, got)
		}
	}
	c.cmd("MAIL FROM:<a@example.org> HOLDFOR=3600", "250")
}

// Whatever follows HOLDFOR= or HOLDUNTIL=, the reply is 250 with a hold
// within max_hold, or 501 5.5.4; the session survives either.
func FuzzHoldParameters(f *testing.F) {
	for _, s := range []string{"HOLDFOR=5", "HOLDFOR=999999999", "HOLDUNTIL=" + rfc3339(time.Hour),
		"HOLDUNTIL=" + holdT0.Add(time.Hour).In(time.FixedZone("", -(23*3600+59*60))).Format(time.RFC3339Nano), "HOLDFOR=", "HOLDUNTIL=+", "BY"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, param string) {
		if strings.ContainsAny(param, "\r\n") || strings.TrimSpace(param) != param || param == "" {
			return
		}
		env := startServer(t, func(o *Options) { o.Clock, o.MaxHold = clock.NewFake(holdT0), time.Hour })
		conn := rawDial(t, env.addr)
		conn.ehlo()
		got := conn.cmd("MAIL FROM:<a@example.org> "+param, "")
		switch {
		case strings.HasPrefix(got, "250 "):
			stored := conn.srvHold(t, env)
			if stored.Release.After(holdT0.Add(time.Hour)) {
				t.Fatalf("%q accepted a release at %v", param, stored.Release)
			}
		case strings.HasPrefix(got, "501 5.5.4 "), strings.HasPrefix(got, "500 5.5.4 "), strings.HasPrefix(got, "553 "):
		case strings.HasPrefix(got, "504 5.5.4 "): // BY (RFC 2852), which go-smtp refuses as not implemented
		default:
			t.Fatalf("%q: %q", param, got)
		}
		conn.cmd("RSET", "250")
	})
}

// srvHold completes the open transaction and returns what was stored.
func (r *rawConn) srvHold(t *testing.T, env *testEnv) queue.Envelope {
	t.Helper()
	r.cmd("RCPT TO:<b@example.net>", "250")
	r.cmd("DATA", "354")
	id := queueIDFrom(t, r.cmd("hi\r\n.", "250"))
	stored, err := env.store.Get(id)
	if err != nil {
		t.Fatal(fmt.Errorf("%s: %w", id, err))
	}
	return *stored
}
