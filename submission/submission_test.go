package submission

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/queue"
)

const msg = "From: app@example.org\r\nTo: bob@example.net\r\nSubject: hi\r\n\r\nHello Bob.\r\n"

var queuedRE = regexp.MustCompile(`^2\.0\.0 Ok: queued as [0-9A-F]+$`)

func TestTrustedClientQueuesMessage(t *testing.T) {
	env := startServer(t, nil)
	c := dial(t, env.addr)
	reply, err := send(c, "app@example.org", []string{"bob@example.net", "carol@example.com"}, msg)
	if err != nil {
		t.Fatal(err)
	}
	// go-smtp's client hands back the text after the code: "2.0.0 Ok: queued as ID".
	if !queuedRE.MatchString(reply) {
		t.Fatalf("reply %q, want 250 2.0.0 Ok: queued as <ID>", reply)
	}
	id := queueIDFrom(t, reply)
	e, err := env.store.Get(id)
	if err != nil {
		t.Fatalf("queue ID from the reply not in the queue: %v", err)
	}
	if e.From != "app@example.org" || len(e.Recipients) != 2 || e.Recipients[1].Address != "carol@example.com" {
		t.Fatalf("stored envelope %+v", e)
	}
	for _, r := range e.Recipients {
		if r.Status != queue.StatusQueued {
			t.Errorf("recipient %s status %s, want queued", r.Address, r.Status)
		}
	}
	if e.ClientAddr != "127.0.0.1" || e.Helo != "client.test" {
		t.Errorf("submitter not recorded: ip %q helo %q", e.ClientAddr, e.Helo)
	}
	body := readBody(t, env.store, id)
	if !strings.HasPrefix(body, "Received: from client.test ([127.0.0.1])\r\n\tby relay.test (relayq) with ESMTP id "+id+";\r\n\t") {
		t.Errorf("missing or malformed Received header:\n%s", body)
	}
	if !strings.HasSuffix(body, msg) {
		t.Errorf("body not stored as sent:\n%q", body)
	}
	if e.Size != int64(len(body)) {
		t.Errorf("size %d, body %d bytes", e.Size, len(body))
	}
}

func TestDSNParametersKept(t *testing.T) {
	env := startServer(t, nil)
	c := dial(t, env.addr)
	if err := c.Mail("app@example.org", &smtp.MailOptions{Return: smtp.DSNReturnFull, EnvelopeID: "env-42"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("bob@example.net", &smtp.RcptOptions{
		Notify:                []smtp.DSNNotify{smtp.DSNNotifyFailure, smtp.DSNNotifyDelayed},
		OriginalRecipientType: smtp.DSNAddressTypeRFC822, OriginalRecipient: "Bob@Example.NET",
	}); err != nil {
		t.Fatal(err)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(w, msg)
	resp, err := w.CloseWithResponse()
	if err != nil {
		t.Fatal(err)
	}
	e, err := env.store.Get(queueIDFrom(t, resp.StatusText))
	if err != nil {
		t.Fatal(err)
	}
	r := e.Recipients[0]
	if e.RET != "FULL" || e.EnvID != "env-42" || r.ORCPT != "rfc822;Bob@Example.NET" || strings.Join(r.Notify, ",") != "FAILURE,DELAY" {
		t.Fatalf("DSN parameters not kept: ret %q envid %q orcpt %q notify %v", e.RET, e.EnvID, r.ORCPT, r.Notify)
	}
}

func TestStrangerCannotRelay(t *testing.T) {
	env := startServer(t, func(o *Options) { o.Policy.Trusted = nil })
	c := dial(t, env.addr)
	err := c.Mail("spammer@example.org", nil)
	if smtpCode(err) != 530 || enhanced(err) != "5.7.0" {
		t.Fatalf("MAIL from an unauthenticated stranger: %v, want 530 5.7.0", err)
	}
	// The usual tricks fare no better: nothing is ever queued.
	for _, to := range []string{"user%other.example@relay.test", "@a,@b:user@c.example", `"quoted user"@example.net`, "user@[IPv6:::1]"} {
		r := rawDial(t, env.addr)
		r.cmd("EHLO x", "250")
		r.cmd("MAIL FROM:<a@b.example>", "530")
		r.cmd("RCPT TO:<"+to+">", "5")
	}
	env.wantQueued(t, 0, " for a stranger")
}

func TestSizeLimit(t *testing.T) {
	const limit = 1000
	env := startServer(t, func(o *Options) { o.MaxMessageBytes = limit })
	body := strings.Repeat("x", limit-2) + "\r\n" // exactly the limit
	c := dial(t, env.addr)
	if _, err := send(c, "a@example.org", []string{"b@example.net"}, body); err != nil {
		t.Fatalf("message of exactly max_message_bytes refused: %v", err)
	}
	_, err := send(c, "a@example.org", []string{"b@example.net"}, "y"+body)
	if smtpCode(err) != 552 || enhanced(err) != "5.3.4" {
		t.Fatalf("oversized message: %v, want 552 5.3.4", err)
	}
	// Declared size over the limit is refused at MAIL already.
	err = c.Mail("a@example.org", &smtp.MailOptions{Size: limit + 10})
	if smtpCode(err) != 552 {
		t.Fatalf("MAIL SIZE over the limit: %v, want 552", err)
	}
	env.wantQueued(t, 1, " (only the one within the limit)")
	// The session keeps working after the refusal.
	c.Reset()
	if _, err := send(c, "a@example.org", []string{"b@example.net"}, msg); err != nil {
		t.Fatalf("session broken after a 552: %v", err)
	}
}

func TestRecipientLimit(t *testing.T) {
	env := startServer(t, func(o *Options) { o.MaxRecipients = 3 })
	c := dial(t, env.addr)
	if err := c.Mail("a@example.org", nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := c.Rcpt(fmt.Sprintf("r%d@example.net", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	err := c.Rcpt("r3@example.net", nil)
	if smtpCode(err) != 452 || enhanced(err) != "4.5.3" {
		t.Fatalf("recipient over the limit: %v, want 452 4.5.3", err)
	}
}

func TestBareNewlinesRefused(t *testing.T) {
	env := startServer(t, nil)
	for name, body := range map[string]string{
		"bare LF":          "Subject: x\n\nhello\r\n",
		"bare CR":          "Subject: x\r\n\r\nhel\rlo\r\n",
		"smuggled LF.LF":   "Subject: x\r\n\r\nhi\n.\nMAIL FROM:<evil@example.org>\r\n",
		"smuggled CRLF.LF": "Subject: x\r\n\r\nhi\r\n.\nMAIL FROM:<evil@example.org>\r\n",
		"smuggled LF.CRLF": "Subject: x\r\n\r\nhi\n.\r\nMAIL FROM:<evil@example.org>\r\n",
		"LF first":         "\nSubject: x\r\n\r\nhi\r\n",
		// go-smtp's own reader drops ".\r" at a line start and would
		// accept this with the dot and the bare CR gone.
		"smuggled CRLF.CR": "Subject: x\r\n\r\nhello\r\n.\rMAIL FROM:<evil@example.org>\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			r := rawDial(t, env.addr)
			r.openData()
			r.send(body + ".\r\n")
			r.expect("550 5.7.0")
			// The session is still usable and in a clean state.
			r.cmd("RSET", "250")
			r.cmd("NOOP", "250")
		})
	}
	env.wantQueued(t, 0, " from bare-newline input")
}

// A smuggling attempt can never turn into a second message: the only end
// of DATA is CRLF.CRLF, and a message carrying the other forms is refused.
func TestSmugglingNeverMakesSecondMessage(t *testing.T) {
	env := startServer(t, nil)
	r := rawDial(t, env.addr)
	r.openData()
	r.send("Subject: one\r\n\r\nbody\n.\r\nMAIL FROM:<admin@example.org>\r\nRCPT TO:<victim@example.net>\r\nDATA\r\nSubject: forged\r\n\r\nforged\r\n.\r\n")
	r.expect("550")
	r.cmd("QUIT", "221")
	env.wantQueued(t, 0, "")
}

func TestStorageFailureGives451(t *testing.T) {
	env := startServer(t, nil)
	c := dial(t, env.addr)
	if _, err := send(c, "a@example.org", []string{"b@example.net"}, msg); err != nil {
		t.Fatal(err)
	}
	env.store.Close() // the disk is gone
	_, err := send(c, "a@example.org", []string{"b@example.net"}, msg)
	if smtpCode(err) != 451 || enhanced(err) != "4.3.0" {
		t.Fatalf("submission with a broken queue: %v, want 451 4.3.0", err)
	}
}

func TestUnknownCommandsAndOrder(t *testing.T) {
	env := startServer(t, nil)
	r := rawDial(t, env.addr)
	r.cmd("EHLO client.test", "250")
	r.cmd("FOO bar", "50")
	r.cmd("MAIL FROM:<a@example.org> BOGUS=1", "50")
	r.cmd("RCPT TO:<b@example.net>", "502")
	r.cmd("DATA", "502")
	r.cmd("MAIL FROM:<a@example.org>", "250")
	r.cmd("RCPT TO:<postmaster>", "553")
	r.cmd("RCPT TO:<b@example.net>", "250")
	r.cmd("DATA", "354")
	r.send(msg + ".\r\n")
	r.expect("250 2.0.0 Ok: queued as ")
}

func TestEHLOAdvertises(t *testing.T) {
	tlsConf, _ := testCert(t)
	env := startServer(t, func(o *Options) {
		o.TLS = tlsConf
		o.Policy.Users = []User{{Username: "u", PasswordHash: hash(t, "p")}}
		o.AllowInsecureAuth = true
	})
	c := dial(t, env.addr)
	for _, ext := range []string{"PIPELINING", "8BITMIME", "ENHANCEDSTATUSCODES", "SIZE", "SMTPUTF8", "STARTTLS", "DSN", "AUTH"} {
		if ok, _ := c.Extension(ext); !ok {
			t.Errorf("EHLO does not advertise %s", ext)
		}
	}
	if _, p := c.Extension("AUTH"); !strings.Contains(p, "PLAIN") || !strings.Contains(p, "LOGIN") {
		t.Errorf("AUTH mechanisms %q", p)
	}
}

func TestConcurrentClients(t *testing.T) {
	env := startServer(t, nil)
	const clients, each = 50, 20
	ids := make(chan string, clients*each)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := smtp.Dial(env.addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for j := 0; j < each; j++ {
				reply, err := send(c, "a@example.org", []string{"b@example.net"}, fmt.Sprintf("Subject: %d-%d\r\n\r\nx\r\n", i, j))
				if err != nil {
					errs <- err
					return
				}
				ids <- queueIDFrom(t, reply)
			}
		}(i)
	}
	wg.Wait()
	close(ids)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("duplicate queue ID %s", id)
		}
		seen[id] = true
		if _, err := env.store.Get(id); err != nil {
			t.Fatalf("accepted %s not stored: %v", id, err)
		}
	}
	if len(seen) != clients*each {
		t.Fatalf("%d accepted, want %d", len(seen), clients*each)
	}
	if n := countMessages(t, env.store); n != clients*each {
		t.Fatalf("%d stored, want %d", n, clients*each)
	}
}

func TestReopenFindsMessagesByteIdentical(t *testing.T) {
	env := startServer(t, nil)
	c := dial(t, env.addr)
	want := map[string]string{}
	for i := 0; i < 5; i++ {
		reply, err := send(c, "a@example.org", []string{"b@example.net"}, fmt.Sprintf("Subject: %d\r\n\r\n%s\r\n", i, strings.Repeat("line\r\n", i*1000)))
		if err != nil {
			t.Fatal(err)
		}
		id := queueIDFrom(t, reply)
		want[id] = readBody(t, env.store, id)
	}
	c.Close()
	if err := env.srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := env.store.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := queue.Open(env.path, queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for id, body := range want {
		if got := readBody(t, st, id); got != body {
			t.Fatalf("message %s changed across restart", id)
		}
		if !strings.HasPrefix(body, "Received: ") {
			t.Fatalf("message %s lost its Received header", id)
		}
	}
}

func TestTooManyConnectionsFromOneIP(t *testing.T) {
	env := startServer(t, func(o *Options) { o.MaxConnsPerIP = 2 })
	a := rawDial(t, env.addr)
	b := rawDial(t, env.addr)
	c := rawDialConn(t, env.addr)
	c.expect("421 4.7.0")
	// The connections already open keep working.
	a.cmd("EHLO a", "250")
	b.cmd("NOOP", "250")
}
