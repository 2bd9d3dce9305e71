package smtptest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// newFakeClock is a clock tests move by hand; WithClock takes its Now.
func newFakeClock() *clock.Fake {
	return clock.NewFake(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
}

// dial connects a go-smtp client with short timeouts (see connect) and
// closes it when the test ends.
func dial(t *testing.T, addr string) *smtp.Client {
	t.Helper()
	c, err := connect(addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// connect is the one way the tests dial the server: a go-smtp client with
// short command and submission timeouts, so that a broken server fails the
// test instead of hanging it. Goroutines other than the test's own use it
// directly, as they must not call t.Fatal.
func connect(addr string) (*smtp.Client, error) {
	c, err := smtp.Dial(addr)
	if err != nil {
		return nil, err
	}
	c.CommandTimeout = waitTimeout
	c.SubmissionTimeout = waitTimeout
	return c, nil
}

// sendData runs DATA with body and returns the error of the final reply.
func sendData(c *smtp.Client, body string) error {
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte(body)); err != nil {
		return err
	}
	return w.Close()
}

// mustSend sends testBody from a@src.test to b@dst.test over c and fails
// the test if a command fails; how names the connection in MAIL's failure.
func mustSend(t *testing.T, c *smtp.Client, how string) {
	t.Helper()
	if err := c.Mail("a@src.test", nil); err != nil {
		t.Fatalf("MAIL %s: %v", how, err)
	}
	if err := c.Rcpt("b@dst.test", nil); err != nil {
		t.Fatal(err)
	}
	if err := sendData(c, testBody); err != nil {
		t.Fatal(err)
	}
}

// send runs one whole transaction on a new connection; it returns the first
// error, from whichever command failed.
func send(t *testing.T, addr, from string, to []string, body string) error {
	t.Helper()
	c := dial(t, addr)
	if err := c.Hello("client.test"); err != nil {
		return err
	}
	if err := c.Mail(from, nil); err != nil {
		return err
	}
	for _, r := range to {
		if err := c.Rcpt(r, nil); err != nil {
			return err
		}
	}
	if err := sendData(c, body); err != nil {
		return err
	}
	return c.Quit()
}

// wantCode fails unless err is an *smtp.SMTPError with the given code and
// enhanced code, and its message contains text.
func wantCode(t *testing.T, err error, code int, enh smtp.EnhancedCode, text string) {
	t.Helper()
	var se *smtp.SMTPError
	if !errors.As(err, &se) {
		t.Fatalf("got error %v (%T), want SMTP reply %d", err, err, code)
	}
	if se.Code != code || se.EnhancedCode != enh || !strings.Contains(se.Message, text) {
		t.Fatalf("got reply %d %v %q, want %d %v containing %q", se.Code, se.EnhancedCode, se.Message, code, enh, text)
	}
}

const waitTimeout = 10 * time.Second

const testBody = "Subject: hi\r\n\r\nhello\r\n"

// sendNoFatal is send for goroutines other than the test's own.
func sendNoFatal(addr, from, body string) error {
	c, err := connect(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Mail(from, nil); err != nil {
		return err
	}
	if err := c.Rcpt("b@dst.test", nil); err != nil {
		return err
	}
	if err := sendData(c, body); err != nil {
		return err
	}
	return c.Quit()
}
