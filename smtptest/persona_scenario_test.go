package smtptest

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// countBy counts the events decided by by.
func countBy(events []Event, by Answerer) int {
	n := 0
	for _, e := range events {
		if e.By == by {
			n++
		}
	}
	return n
}

// A sender pushing 30 messages quickly at gmail,rate=10/min gets 421
// 4.7.28 after the 10th, and gets through again once the minute is over.
func TestPersonaGmailRate(t *testing.T) {
	clk := newFakeClock()
	srv := NewServer(t, WithClock(clk.Now), Persona("gmail,rate=10/min"))
	accepted, refused := 0, 0
	for i := 0; i < 30; i++ {
		err := send(t, srv.Addr(), "app@src.test", []string{"user@gmail.test"}, testBody)
		switch {
		case err == nil:
			accepted++
		default:
			wantCode(t, err, 421, smtp.EnhancedCode{4, 7, 28}, "Our system has detected an unusual rate of unsolicited mail originating from your IP address.")
			if accepted != 10 {
				t.Fatalf("refused after %d messages, want after the 10th", accepted)
			}
			refused++
		}
		clk.Advance(time.Second) // 30 messages in 30 seconds: all within the minute
	}
	if accepted != 10 || refused != 20 {
		t.Fatalf("accepted %d, refused %d; want 10 and 20", accepted, refused)
	}
	if n := countBy(srv.Events(), ByPersona("gmail")); n != 20 {
		t.Fatalf("%d events by persona:gmail, want 20", n)
	}
	clk.Advance(time.Minute)
	if err := send(t, srv.Addr(), "app@src.test", []string{"user@gmail.test"}, testBody); err != nil {
		t.Fatalf("after the window: %v", err)
	}
}

// The connection beyond outlook's limit gets Exchange Online's throttling
// reply, with the client's IP in it.
func TestPersonaOutlookConnections(t *testing.T) {
	srv := NewServer(t, Persona("outlook,conns=2"))
	for i := 0; i < 2; i++ {
		if err := dial(t, srv.Addr()).Hello("client.test"); err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
	}
	err := dial(t, srv.Addr()).Hello("client.test")
	wantCode(t, err, 451, smtp.EnhancedCode{4, 7, 500}, "Server busy. Please try again later from [127.0.0.1]. (S77719)")
	if last := lastRefusal(srv.Events()); last.Stage != StageGreeting || last.By != "persona:outlook" {
		t.Fatalf("event %+v", last)
	}
}

// yahoo's deferral outlasts its rate window: it clears after the cool-down.
func TestPersonaYahooCoolDown(t *testing.T) {
	clk := newFakeClock()
	srv := NewServer(t, WithClock(clk.Now), Persona("yahoo,rate=2/min,cooldown=10m"))
	for i := 0; i < 2; i++ {
		if err := send(t, srv.Addr(), "a@src.test", []string{"u@yahoo.test"}, testBody); err != nil {
			t.Fatal(err)
		}
	}
	tss04 := "[TSS04] Messages from 127.0.0.1 temporarily deferred"
	wantCode(t, send(t, srv.Addr(), "a@src.test", []string{"u@yahoo.test"}, testBody), 421, smtp.EnhancedCode{4, 7, 0}, tss04)
	clk.Advance(2 * time.Minute) // the rate window is over, the cool-down is not
	wantCode(t, send(t, srv.Addr(), "a@src.test", []string{"u@yahoo.test"}, testBody), 421, smtp.EnhancedCode{4, 7, 0}, tss04)
	clk.Advance(10 * time.Minute)
	if err := send(t, srv.Addr(), "a@src.test", []string{"u@yahoo.test"}, testBody); err != nil {
		t.Fatalf("after the cool-down: %v", err)
	}
}

// flakyRun returns which of 20 recipients a flaky server refused.
func flakyRun(t *testing.T, spec string) string {
	srv := NewServer(t, Persona(spec))
	c := dial(t, srv.Addr())
	if err := c.Mail("a@src.test", nil); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; i < 20; i++ {
		if c.Rcpt("u@dst.test", nil) != nil {
			b.WriteByte('x')
		} else {
			b.WriteByte('.')
		}
	}
	return b.String()
}

func TestPersonaFlakyIsSeeded(t *testing.T) {
	a, b := flakyRun(t, "flaky,fraction=0.5,seed=7"), flakyRun(t, "flaky,fraction=0.5,seed=7")
	if a != b || !strings.Contains(a, "x") || !strings.Contains(a, ".") {
		t.Fatalf("same seed: %s and %s, want the same mix", a, b)
	}
	if c := flakyRun(t, "flaky,fraction=0.5,seed=8"); c == a {
		t.Fatalf("another seed gave the same %s", c)
	}
}

func TestPersonaGreylistThenThrough(t *testing.T) {
	clk := newFakeClock()
	srv := NewServer(t, WithClock(clk.Now), Persona("greylist-wait,delay=1m"))
	wantCode(t, send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, testBody), 451, smtp.EnhancedCode{4, 7, 1}, "Greylisted, try again in 60 seconds")
	clk.Advance(time.Minute)
	if err := send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, testBody); err != nil {
		t.Fatalf("retry after the delay: %v", err)
	}
}

func TestPersonaTarpitIsSlow(t *testing.T) {
	srv := NewServer(t, Persona("tarpit,delay=100ms"))
	start := time.Now()
	if err := send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, testBody); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 400*time.Millisecond { // greeting, mail, rcpt, data
		t.Fatalf("a transaction took %v, want at least 4 × 100ms", d)
	}
}

// Personas combine with rules (which come first) and are part of the
// script: visible, replaceable, and a typo in one is a 400 naming it.
func TestPersonaInScript(t *testing.T) {
	srv := NewServer(t, Persona("gmail,unknown=nobody@*"), Reply("rcpt:nobody@vip.test=250"))
	if err := send(t, srv.Addr(), "a@src.test", []string{"nobody@vip.test"}, testBody); err != nil {
		t.Fatalf("the rule should win over the persona: %v", err)
	}
	wantCode(t, send(t, srv.Addr(), "a@src.test", []string{"nobody@dst.test"}, testBody), 550, smtp.EnhancedCode{5, 1, 1}, "does not exist")
	base := startAPI(t, srv)
	if _, body := do(t, "GET", base+"/api/v1/script", ""); !strings.Contains(body, "--persona gmail,unknown=nobody@*\n") {
		t.Fatalf("script %q lacks the persona", body)
	}
	if status, body := do(t, "PUT", base+"/api/v1/script", "--persona outlook, conns=1\n"); status != 200 || body != "--persona outlook,conns=1\n" {
		t.Fatalf("PUT: %d %q", status, body)
	}
	for script, want := range map[string]string{
		"--persona gmial\n":            `unknown persona "gmial"`,
		"--persona gmail,rat=1/min\n":  `unknown parameter "rat"`,
		"--persona gmail,rate=often\n": `rate "often"`,
		"--persona yahoo,cooldown=x\n": `cooldown "x"`,
	} {
		status, body := do(t, "PUT", base+"/api/v1/script", script)
		if status != http.StatusBadRequest || !strings.Contains(apiErrorOf(t, body), want) {
			t.Errorf("PUT %q: %d %s, want 400 with %q", script, status, body, want)
		}
	}
}

// A persona file adds personas beside the built-in ones, in their format.
func TestPersonaFileAddsOwn(t *testing.T) {
	file := t.TempDir() + "/mine.yaml"
	if err := os.WriteFile(file, []byte("picky:\n  params: {who: \"\"}\n  checks:\n    - {kind: unknown, stage: rcpt, match: \"{who}\", reply: \"550 5.1.1 No such mailbox here\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := NewServer(t, PersonaFile(file), Persona("picky,who=*@old.test"), Persona("gmail"))
	wantCode(t, send(t, srv.Addr(), "a@src.test", []string{"x@old.test"}, testBody), 550, smtp.EnhancedCode{5, 1, 1}, "No such mailbox here")
	if last := lastRefusal(srv.Events()); last.By != "persona:picky" {
		t.Fatalf("event %+v", last)
	}
}
