package submission

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// Limits that must say what they do: SIZE, AUTH guesses, the session's
// length.

// TestSizeAdvertisedIsAccepted: EHLO's SIZE is exactly the largest message
// accepted (RFC 1870: a client that declares SIZE= that value must not
// get 552, and go-smtp's MaxMessageBytes refuses a body of exactly its
// advertised SIZE).
func TestSizeAdvertisedIsAccepted(t *testing.T) {
	const limit = 1000
	env := startServer(t, func(o *Options) { o.MaxMessageBytes = limit })
	c := dial(t, env.addr)
	if _, p := c.Extension("SIZE"); p != fmt.Sprint(limit) {
		t.Fatalf("EHLO advertises SIZE %q, want %d", p, limit)
	}
	if err := c.Mail("a@example.org", &smtp.MailOptions{Size: limit}); err != nil {
		t.Fatalf("MAIL SIZE=%d (the advertised value): %v", limit, err)
	}
	c.Reset()
	if err := c.Mail("a@example.org", &smtp.MailOptions{Size: limit + 1}); smtpCode(err) != 552 {
		t.Fatalf("MAIL SIZE=%d: %v, want 552", limit+1, err)
	}
	c.Reset()
	// A body of exactly the limit goes through DATA and BDAT alike.
	body := strings.Repeat("x", limit-2) + "\r\n"
	if _, err := send(c, "a@example.org", []string{"b@example.net"}, body); err != nil {
		t.Fatalf("DATA of exactly SIZE: %v", err)
	}
	r := rawDial(t, env.addr)
	r.openTransaction()
	r.send(fmt.Sprintf("BDAT %d LAST\r\n%s", len(body), body))
	r.expect("250 2.0.0 Ok: queued as ")
	r.openTransaction()
	r.send(fmt.Sprintf("BDAT %d LAST\r\n%sy", len(body)+1, body))
	r.expect("552")
}

// TestAuthGuessesInFlightCounted: guesses checked in parallel count against
// the limit while they are being checked, or parallel guesses would all
// be checked against a limit meant for them together.
func TestAuthGuessesInFlightCounted(t *testing.T) {
	const limit, parallel = 3, 9
	env := startServer(t, func(o *Options) {
		o.AllowInsecureAuth = true
		o.AuthMaxFailures = limit
		o.Policy.Users = []User{{Username: "app", PasswordHash: hash(t, "s3cret")}}
	})
	clients := make([]*smtp.Client, parallel)
	for i := range clients {
		clients[i] = dial(t, env.addr)
	}
	codes := make(chan int, parallel)
	start := make(chan struct{})
	for i, c := range clients {
		go func() {
			<-start
			codes <- smtpCode(c.Auth(sasl.NewPlainClient("", "app", fmt.Sprint("guess", i))))
		}()
	}
	close(start)
	checked := 0
	for range clients {
		switch code := <-codes; code {
		case 535:
			checked++
		case 454:
		default:
			t.Errorf("parallel guess: reply %d, want 535 or 454", code)
		}
	}
	if checked > limit {
		t.Fatalf("%d parallel guesses were checked, limit %d", checked, limit)
	}
}

// TestSessionTimeoutNotExtendedByCommands: a client that sends valid
// commands, each well inside read_timeout, is still hung up on with 421
// once the session has lasted session_timeout.
func TestSessionTimeoutNotExtendedByCommands(t *testing.T) {
	env := startServer(t, func(o *Options) {
		o.ReadTimeout = time.Second
		o.SessionTimeout = 500 * time.Millisecond
	})
	r := rawDial(t, env.addr)
	r.cmd("EHLO client.test", "250")
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		<-tick.C
		if i > 200 {
			t.Fatal("session still open after 200 NOOPs 50 ms apart")
		}
		r.send("NOOP\r\n")
		if l := r.reply(); strings.HasPrefix(l, "421 4.4.2") {
			break
		} else if !strings.HasPrefix(l, "250") {
			t.Fatalf("NOOP: %q", l)
		}
	}
	if ok, rest := closedWithin(r.c, 5*time.Second); !ok {
		t.Fatalf("not closed after the 421; server said %q", rest)
	}
}
