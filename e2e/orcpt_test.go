package e2e

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// dsnHop is a next hop that offers DSN and SMTPUTF8 (smtptest offers
// neither) and records the RCPT lines it was sent, as sent.
type dsnHop struct {
	mu    sync.Mutex
	lines []string // RCPT commands, from the transcript
	rcpts []string // recipients of completed transactions
	nulls int      // transactions from <>: reports
	cur   []string
}

func (h *dsnHop) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range strings.Split(string(p), "\n") {
		if strings.HasPrefix(l, "RCPT TO:") {
			h.lines = append(h.lines, strings.TrimRight(l, "\r"))
		}
	}
	return len(p), nil
}

func (h *dsnHop) NewSession(*smtp.Conn) (smtp.Session, error) { return h, nil }
func (h *dsnHop) Mail(from string, _ *smtp.MailOptions) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if from == "" {
		h.nulls++
	}
	return nil
}
func (h *dsnHop) Rcpt(to string, _ *smtp.RcptOptions) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur = append(h.cur, to)
	return nil
}
func (h *dsnHop) Data(r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rcpts = append(h.rcpts, h.cur...)
	return err
}
func (h *dsnHop) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur = nil
}
func (h *dsnHop) Logout() error { return nil }

func startDSNHop(t *testing.T) (*dsnHop, string) {
	t.Helper()
	h := &dsnHop{}
	srv := smtp.NewServer(h)
	srv.Domain, srv.EnableDSN, srv.EnableSMTPUTF8, srv.Debug = "next.test", true, true, h
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return h, ln.Addr().String()
}

// A UTF-8 recipient relayed by Postfix: Postfix passes the recipient's
// ORCPT on as rfc822 xtext with 8-bit octets (zo+C3+AB) when it has DSN
// parameters to pass. relayq must take it (go-smtp v0.26.0 answered 501 and
// Postfix bounced the recipient) and hand the message with the ORCPT to
// the next hop, as RFC 6533 utf-8-addr-unitext in that SMTPUTF8
// transaction.
func TestInteropPostfixUTF8RecipientWithORCPT(t *testing.T) {
	hop, hopAddr := startDSNHop(t)
	r := startRelay(t, hopAddr)
	pf := startPostfixWith(t, r.addr, map[string]string{"smtputf8_enable": "yes"})

	c := mustDial(t, pf)
	c.steps(t, "to Postfix: ",
		step{"MAIL FROM:<app@example.org> SMTPUTF8", 250},
		step{"RCPT TO:<zoë@example.net> NOTIFY=SUCCESS,FAILURE", 250},
		step{"DATA", 354},
		step{"From: <app@example.org>\r\nTo: <zoë@example.net>\r\nSubject: tok-orcpt\r\n\r\nHallo.\r\n.", 250},
	)

	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		hop.mu.Lock()
		rcpts, nulls, lines := strings.Join(hop.rcpts, ","), hop.nulls, hop.lines
		hop.mu.Unlock()
		if strings.Contains(rcpts, "zoë@example.net") {
			break
		}
		if nulls > 0 {
			t.Fatalf("a bounce reached the next hop instead of the message; RCPT lines: %q", lines)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the message for zoë@example.net never reached the next hop; RCPT lines there: %q", lines)
		}
		<-tick.C
	}
	want := "RCPT TO:<zoë@example.net> NOTIFY=SUCCESS,FAILURE ORCPT=utf-8;zoë@example.net"
	hop.mu.Lock()
	defer hop.mu.Unlock()
	for _, l := range hop.lines {
		if l == want {
			return
		}
	}
	t.Fatalf("next hop got RCPT %q, want %q", hop.lines, want)
}
