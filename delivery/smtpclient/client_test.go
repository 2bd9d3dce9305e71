package smtpclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/smtpcodes"
	"github.com/relayq/relayq/smtptest"
)

const testBody = "From: a@example.test\r\nTo: b@example.test\r\nSubject: hi\r\n\r\nHello.\r\n"

func hopTo(t *testing.T, addr string) Hop {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return Hop{Host: host, Port: port, MX: addr}
}

func bodyOf(s string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(s)), nil }
}

func envelope(rcpts ...string) Envelope {
	env := Envelope{From: "sender@example.test", Size: int64(len(testBody))}
	for _, r := range rcpts {
		env.Recipients = append(env.Recipients, RcptReq{Address: r})
	}
	return env
}

func testDialer() *Dialer {
	return &Dialer{Hostname: "relay.test", ConnectTimeout: 5 * time.Second, CommandTimeout: 5 * time.Second}
}

func deliver(t *testing.T, d *Dialer, hops []Hop, env Envelope, body func() (io.ReadCloser, error)) []RcptResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res := d.Deliver(ctx, hops, env, body)
	if len(res) != len(env.Recipients) {
		t.Fatalf("got %d results for %d recipients", len(res), len(env.Recipients))
	}
	for i, r := range res {
		if r.Address != env.Recipients[i].Address {
			t.Fatalf("result %d is for %s, want %s", i, r.Address, env.Recipients[i].Address)
		}
	}
	return res
}

// wantReply checks class, code and enhanced code of a result.
func wantReply(t *testing.T, r RcptResult, class smtpcodes.Class, code int, enhanced string) {
	t.Helper()
	if r.Reply.Class != class || r.Reply.Code != code || r.Reply.Enhanced != enhanced {
		t.Errorf("%s: reply %q (%v), want %v %d %s", r.Address, r.Reply.String(), r.Reply.Class, class, code, enhanced)
	}
}

func wantAll(t *testing.T, res []RcptResult, class smtpcodes.Class, code int, enhanced string) {
	t.Helper()
	for _, r := range res {
		wantReply(t, r, class, code, enhanced)
	}
}

func TestDeliverPerRecipientReplies(t *testing.T) {
	srv := smtptest.NewServer(t,
		smtptest.Reply("rcpt:bounce@=550 5.1.1 No such user", "rcpt:later@=451 4.3.0 Try later"))
	res := deliver(t, testDialer(), []Hop{hopTo(t, srv.Addr())},
		envelope("bounce@example.test", "ok@example.test", "later@example.test"), bodyOf(testBody))

	wantReply(t, res[0], smtpcodes.Permanent, 550, "5.1.1")
	wantReply(t, res[1], smtpcodes.Success, 250, "2.0.0")
	wantReply(t, res[2], smtpcodes.Transient, 451, "4.3.0")
	for _, r := range res {
		if r.RemoteMTA != "127.0.0.1" {
			t.Errorf("%s: RemoteMTA %q, want 127.0.0.1", r.Address, r.RemoteMTA)
		}
	}
	msgs := srv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("server got %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if strings.Join(m.To, ",") != "ok@example.test" || m.From != "sender@example.test" || string(m.Data) != testBody {
		t.Errorf("message = from %s to %v data %q", m.From, m.To, m.Data)
	}
	if m.Helo != "relay.test" {
		t.Errorf("EHLO name %q, want relay.test", m.Helo)
	}
}

func TestDeliverNoRecipientAcceptedSendsNoData(t *testing.T) {
	srv := smtptest.NewServer(t, smtptest.Reply("rcpt=550 5.1.1 No such user"))
	opened := false
	res := deliver(t, testDialer(), []Hop{hopTo(t, srv.Addr())}, envelope("a@example.test", "b@example.test"),
		func() (io.ReadCloser, error) { opened = true; return io.NopCloser(strings.NewReader(testBody)), nil })
	wantAll(t, res, smtpcodes.Permanent, 550, "5.1.1")
	if opened {
		t.Error("body opened although no recipient was accepted")
	}
	for _, e := range srv.Events() {
		if e.Stage == smtptest.StageData {
			t.Errorf("DATA sent: %+v", e)
		}
	}
}

func TestDeliverFailover(t *testing.T) {
	tests := []struct {
		name  string
		first func(t *testing.T) (addr string, conns func() int)
	}{
		{"421 greeting", func(t *testing.T) (string, func() int) {
			s := smtptest.NewServer(t, smtptest.Reply("greeting=421 4.3.2 Too busy"))
			return s.Addr(), s.Connections
		}},
		{"554 greeting", func(t *testing.T) (string, func() int) {
			s := smtptest.NewServer(t, smtptest.Reply("greeting=554 5.7.1 Go away"))
			return s.Addr(), s.Connections
		}},
		{"connection refused", func(t *testing.T) (string, func() int) {
			return smtptest.DownAddr(t), func() int { return 1 }
		}},
		{"451 at MAIL", func(t *testing.T) (string, func() int) {
			s := smtptest.NewServer(t, smtptest.Reply("mail=451 4.3.0 Local trouble"))
			return s.Addr(), s.Connections
		}},
		{"4xx EHLO", func(t *testing.T) (string, func() int) {
			s := smtptest.NewServer(t, smtptest.Reply("ehlo=421 4.3.2 Bye"))
			return s.Addr(), s.Connections
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first, conns := tc.first(t)
			second := smtptest.NewServer(t)
			res := deliver(t, testDialer(), []Hop{hopTo(t, first), hopTo(t, second.Addr())},
				envelope("a@example.test", "b@example.test"), bodyOf(testBody))
			wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
			if n := second.MessageCount(); n != 1 {
				t.Errorf("second hop got %d messages, want 1", n)
			}
			if conns() != 1 {
				t.Errorf("first hop saw %d connections, want 1", conns())
			}
		})
	}
}

func TestDeliverAllHopsFail(t *testing.T) {
	busy := smtptest.NewServer(t, smtptest.Reply("greeting=421 4.3.2 Too busy"))
	refused := smtptest.DownAddr(t)

	// The last transient failure is reported; a 421 suspends the destination.
	res := deliver(t, testDialer(), []Hop{hopTo(t, refused), hopTo(t, busy.Addr())}, envelope("a@example.test"), bodyOf(testBody))
	wantAll(t, res, smtpcodes.Transient, 421, "4.3.2")
	if !res[0].Reply.SuspendsDestination() || res[0].RemoteMTA != "127.0.0.1" {
		t.Errorf("result %+v: want a 421 that suspends the destination", res[0])
	}

	res = deliver(t, testDialer(), []Hop{hopTo(t, busy.Addr()), hopTo(t, refused)}, envelope("a@example.test"), bodyOf(testBody))
	wantAll(t, res, smtpcodes.Transient, 0, "4.4.1")

	res = deliver(t, testDialer(), nil, envelope("a@example.test"), bodyOf(testBody))
	wantAll(t, res, smtpcodes.Transient, 0, "4.4.4")
}

func TestDeliverAfterMailIsFinal(t *testing.T) {
	// Once MAIL is accepted the hop's answers stand: a 421 at RCPT ends the
	// attempt for everyone not bounced, and the next hop is not tried (that
	// could deliver a copy through each).
	first := smtptest.NewServer(t, smtptest.Reply("rcpt:x@=550 5.1.1 Unknown", "rcpt:b@=421 4.3.2 Closing"))
	second := smtptest.NewServer(t)
	res := deliver(t, testDialer(), []Hop{hopTo(t, first.Addr()), hopTo(t, second.Addr())},
		envelope("x@example.test", "a@example.test", "b@example.test", "c@example.test"), bodyOf(testBody))
	wantReply(t, res[0], smtpcodes.Permanent, 550, "5.1.1")
	for _, r := range res[1:] {
		wantReply(t, r, smtpcodes.Transient, 421, "4.3.2")
		if !r.Reply.SuspendsDestination() {
			t.Errorf("%s: 421 should suspend the destination", r.Address)
		}
	}
	if first.MessageCount()+second.MessageCount() != 0 || second.Connections() != 0 {
		t.Errorf("messages %d+%d, second-hop connections %d; want none", first.MessageCount(), second.MessageCount(), second.Connections())
	}

	// A sender refused permanently is final too.
	first = smtptest.NewServer(t, smtptest.Reply("mail=550 5.7.1 Sender blocked"))
	res = deliver(t, testDialer(), []Hop{hopTo(t, first.Addr()), hopTo(t, second.Addr())}, envelope("a@example.test"), bodyOf(testBody))
	wantAll(t, res, smtpcodes.Permanent, 550, "5.7.1")
	if second.Connections() != 0 {
		t.Error("second hop tried after a permanent MAIL refusal")
	}

	// A DATA reply applies to every accepted recipient.
	first = smtptest.NewServer(t, smtptest.Reply("data=554 5.6.0 Content rejected"))
	res = deliver(t, testDialer(), []Hop{hopTo(t, first.Addr())}, envelope("a@example.test", "b@example.test"), bodyOf(testBody))
	wantAll(t, res, smtpcodes.Permanent, 554, "5.6.0")
}

func TestBodyLineEndsAreNormalised(t *testing.T) {
	srv := smtptest.NewServer(t)
	in := "Subject: x\r\n\r\nbare CR\rbare LF\nCRLF\r\n.dot\r\nCR CR LF\r\r\nends in CR\r"
	want := "Subject: x\r\n\r\nbare CR\r\nbare LF\r\nCRLF\r\n.dot\r\nCR CR LF\r\n\r\nends in CR\r\n"
	// One byte per read, so CR and LF arrive in separate writes.
	body := func() (io.ReadCloser, error) {
		return io.NopCloser(iotest.OneByteReader(strings.NewReader(in))), nil
	}
	res := deliver(t, testDialer(), []Hop{hopTo(t, srv.Addr())}, envelope("a@example.test"), body)
	wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
	msgs := srv.Messages()
	if len(msgs) != 1 || string(msgs[0].Data) != want {
		t.Fatalf("server got %q, want %q", msgs[0].Data, want)
	}
}

func TestBodyErrors(t *testing.T) {
	srv := smtptest.NewServer(t, smtptest.Reply("rcpt:no@=550 5.1.1 Unknown"))
	env := envelope("no@example.test", "a@example.test")

	res := deliver(t, testDialer(), []Hop{hopTo(t, srv.Addr())}, env,
		func() (io.ReadCloser, error) { return nil, errors.New("disk on fire") })
	wantReply(t, res[0], smtpcodes.Permanent, 550, "5.1.1")
	wantReply(t, res[1], smtpcodes.Transient, 0, "4.3.0")

	// A read error half way must not leave a truncated message delivered.
	res = deliver(t, testDialer(), []Hop{hopTo(t, srv.Addr())}, env, func() (io.ReadCloser, error) {
		return io.NopCloser(io.MultiReader(strings.NewReader("Subject: half\r\n"), iotest.ErrReader(errors.New("bad sector")))), nil
	})
	wantReply(t, res[1], smtpcodes.Transient, 0, "4.3.0")
	if srv.MessageCount() != 0 {
		t.Errorf("server recorded %d messages, want 0", srv.MessageCount())
	}
}

func TestExtensionLimits(t *testing.T) {
	t.Run("SIZE", func(t *testing.T) {
		srv := smtptest.NewServer(t, smtptest.WithConfig(smtptest.Config{MaxMessageBytes: 100}))
		env := envelope("a@example.test")
		env.Size = 1000
		res := deliver(t, testDialer(), []Hop{hopTo(t, srv.Addr())}, env, bodyOf(testBody))
		wantAll(t, res, smtpcodes.Permanent, 0, "5.3.4")
		if srv.MessageCount() != 0 {
			t.Error("oversized message sent")
		}
	})
	t.Run("SMTPUTF8 not offered", func(t *testing.T) {
		srv := smtptest.NewServer(t)
		res := deliver(t, testDialer(), []Hop{hopTo(t, srv.Addr())}, envelope("用户@example.test", "a@example.test"), bodyOf(testBody))
		wantReply(t, res[0], smtpcodes.Permanent, 0, "5.6.7")
		wantReply(t, res[1], smtpcodes.Success, 250, "2.0.0")

		env := envelope("a@example.test")
		env.From = "发件人@example.test"
		res = deliver(t, testDialer(), []Hop{hopTo(t, srv.Addr())}, env, bodyOf(testBody))
		wantAll(t, res, smtpcodes.Permanent, 0, "5.6.7")
	})
}

func TestCommandTimeout(t *testing.T) {
	srv := smtptest.NewServer(t, smtptest.Reply("rcpt=delay 30s 250"))
	d := testDialer()
	d.CommandTimeout = 200 * time.Millisecond
	start := time.Now()
	res := deliver(t, d, []Hop{hopTo(t, srv.Addr())}, envelope("a@example.test"), bodyOf(testBody))
	wantAll(t, res, smtpcodes.Transient, 0, "4.4.2")
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("attempt took %v with a 200ms command timeout", el)
	}
}

func TestCancelAbortsAttempt(t *testing.T) {
	srv := smtptest.NewServer(t, smtptest.Reply("rcpt=delay 30s 250"))
	second := smtptest.NewServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan []RcptResult, 1)
	go func() {
		done <- testDialer().Deliver(ctx, []Hop{hopTo(t, srv.Addr()), hopTo(t, second.Addr())},
			envelope("a@example.test"), bodyOf(testBody))
	}()
	srv.WaitFor(t, 5*time.Second, func() bool {
		for _, e := range srv.Events() {
			if e.Stage == smtptest.StageMail {
				return true
			}
		}
		return false
	})
	cancel()
	select {
	case res := <-done:
		wantAll(t, res, smtpcodes.Transient, 0, "4.4.2")
		if !strings.Contains(res[0].Reply.Text, "abandoned") {
			t.Errorf("reply %q should say the attempt was abandoned", res[0].Reply.Text)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Deliver did not return after cancel")
	}
	if second.Connections() != 0 {
		t.Error("next hop tried after cancel")
	}
}

// dsnServer is a go-smtp server with DSN enabled that records the
// parameters it was given; smtptest does not advertise DSN.
type dsnServer struct {
	mu   sync.Mutex
	mail smtp.MailOptions
	rcpt []smtp.RcptOptions
	data []byte
}

func (b *dsnServer) NewSession(*smtp.Conn) (smtp.Session, error) { return b, nil }
func (b *dsnServer) Reset()                                      {}
func (b *dsnServer) Logout() error                               { return nil }
func (b *dsnServer) Mail(_ string, o *smtp.MailOptions) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mail = *o
	return nil
}
func (b *dsnServer) Rcpt(_ string, o *smtp.RcptOptions) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rcpt = append(b.rcpt, *o)
	return nil
}
func (b *dsnServer) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.data = data
	return err
}

func TestDSNParametersPassedWhenAdvertised(t *testing.T) {
	b := &dsnServer{}
	srv := smtp.NewServer(b)
	srv.EnableDSN = true
	srv.EnableSMTPUTF8 = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	env := Envelope{
		From: "sender@example.test", RET: "hdrs", EnvID: "env-42", SMTPUTF8: true, Size: int64(len(testBody)),
		Recipients: []RcptReq{
			{Address: "a@example.test", ORCPT: "rfc822;orig+a@example.test", Notify: []string{"success", "FAILURE"}},
			{Address: "b@example.test", ORCPT: "utf-8;用户@example.test", Notify: []string{"NEVER", "DELAY"}}, // invalid: dropped
			{Address: "c@example.test"},
		},
	}
	res := deliver(t, testDialer(), []Hop{hopTo(t, ln.Addr().String())}, env, bodyOf(testBody))
	wantAll(t, res, smtpcodes.Success, 250, "2.0.0")

	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mail.Return != smtp.DSNReturnHeaders || b.mail.EnvelopeID != "env-42" || !b.mail.UTF8 || b.mail.Size != int64(len(testBody)) {
		t.Errorf("MAIL options = %+v", b.mail)
	}
	if len(b.rcpt) != 3 {
		t.Fatalf("got %d RCPTs", len(b.rcpt))
	}
	if r := b.rcpt[0]; r.OriginalRecipientType != smtp.DSNAddressTypeRFC822 || r.OriginalRecipient != "orig+a@example.test" ||
		len(r.Notify) != 2 || r.Notify[0] != smtp.DSNNotifySuccess || r.Notify[1] != smtp.DSNNotifyFailure {
		t.Errorf("RCPT a options = %+v", r)
	}
	if r := b.rcpt[1]; r.OriginalRecipientType != smtp.DSNAddressTypeUTF8 || r.OriginalRecipient != "用户@example.test" || r.Notify != nil {
		t.Errorf("RCPT b options = %+v", r)
	}
	if r := b.rcpt[2]; r.OriginalRecipient != "" || r.Notify != nil {
		t.Errorf("RCPT c options = %+v", r)
	}
	if !bytes.Equal(b.data, []byte(testBody)) {
		t.Errorf("body = %q", b.data)
	}
}

func TestDSNParametersOmittedWhenNotAdvertised(t *testing.T) {
	// smtptest does not offer DSN; go-smtp refuses NOTIFY/ORCPT/RET there,
	// so the delivery only succeeds if they were left out.
	srv := smtptest.NewServer(t)
	env := envelope("a@example.test")
	env.RET, env.EnvID = "FULL", "x"
	env.Recipients[0].ORCPT, env.Recipients[0].Notify = "rfc822;a@example.test", []string{"FAILURE"}
	res := deliver(t, testDialer(), []Hop{hopTo(t, srv.Addr())}, env, bodyOf(testBody))
	wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
}
