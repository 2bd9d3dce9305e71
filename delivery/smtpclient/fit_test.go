package smtpclient

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message"

	"github.com/relayq/relayq/smtpcodes"
	"github.com/relayq/relayq/smtptest"
)

const eightBitBody = "From: a@example.test\r\nTo: b@example.test\r\nSubject: hi\r\n" +
	"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"xx\"\r\n\r\n" +
	"--xx\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nGrüße aus Köln\r\n" +
	"--xx\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: binary\r\n\r\n\x00\xff\xfe\x80\r\n" +
	"--xx--\r\n"

func eightBitEnvelope(rcpts ...string) Envelope {
	env := envelope(rcpts...)
	env.Body, env.Size = "8BITMIME", int64(len(eightBitBody))
	return env
}

// decodedParts lists each leaf's media type and transfer-decoded body.
func decodedParts(t *testing.T, msg []byte) []string {
	t.Helper()
	e, err := message.Read(strings.NewReader(string(msg)))
	if err != nil {
		t.Fatalf("read delivered message: %v", err)
	}
	var parts []string
	err = e.Walk(func(_ []int, e *message.Entity, err error) error {
		if err != nil || e.MultipartReader() != nil {
			return err
		}
		mt, _, _ := e.Header.ContentType()
		b, err := io.ReadAll(e.Body)
		parts = append(parts, mt+": "+string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return parts
}

func has8Bit(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// To a server without 8BITMIME (Postfix's smtp-sink -8) an 8-bit body must
// not go as it is (RFC 6152 section 3): it goes out in 7 bit, MAIL without
// BODY=, and decodes to the same parts.
func TestEightBitBodyConvertedForServerWithout8BitMIME(t *testing.T) {
	srv := smtptest.NewServer(t, smtptest.No8BitMIME())
	res := deliver(t, testDialer(), []Hop{hopTo(t, srv.Addr())}, eightBitEnvelope("b@example.test"), bodyOf(eightBitBody))
	wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
	m := srv.WaitMessages(t, 1, 5*time.Second)[0]
	if has8Bit(m.Data) {
		t.Fatalf("8-bit data sent to a server without 8BITMIME:\n%s", m.Data)
	}
	if m.BodyType != "" {
		t.Errorf("MAIL had BODY=%s", m.BodyType)
	}
	got, want := decodedParts(t, m.Data), decodedParts(t, []byte(eightBitBody))
	if strings.Join(got, "\n--\n") != strings.Join(want, "\n--\n") {
		t.Errorf("parts differ after conversion:\n got %q\nwant %q", got, want)
	}
	for _, enc := range []string{"quoted-printable", "base64"} {
		if !strings.Contains(string(m.Data), "Content-Transfer-Encoding: "+enc) {
			t.Errorf("no %s part in:\n%s", enc, m.Data)
		}
	}
}

// The same server still gets 7-bit mail untouched, and a server that
// offers 8BITMIME gets 8-bit mail as it is, with BODY=8BITMIME.
func TestEightBitUntouchedWhereAllowed(t *testing.T) {
	plain := smtptest.NewServer(t, smtptest.No8BitMIME())
	res := deliver(t, testDialer(), []Hop{hopTo(t, plain.Addr())}, envelope("b@example.test"), bodyOf(testBody))
	wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
	if m := plain.WaitMessages(t, 1, 5*time.Second)[0]; string(m.Data) != testBody {
		t.Errorf("7-bit body changed: %q", m.Data)
	}
	full := smtptest.NewServer(t)
	res = deliver(t, testDialer(), []Hop{hopTo(t, full.Addr())}, eightBitEnvelope("b@example.test"), bodyOf(eightBitBody))
	wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
	m := full.WaitMessages(t, 1, 5*time.Second)[0]
	if string(m.Data) != eightBitBody || m.BodyType != "8BITMIME" {
		t.Errorf("8BITMIME server got BODY=%q and a changed body: %q", m.BodyType, m.Data)
	}
}

// What cannot be converted is bounced with 5.6.3 before MAIL, and so is a
// message relayq signed (its DKIM body hash would break).
func TestUnconvertibleBounced563(t *testing.T) {
	signed := "Content-Type: multipart/signed; boundary=s; protocol=\"application/pgp-signature\"\r\n\r\n" +
		"--s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nGrüße\r\n" +
		"--s\r\nContent-Type: application/pgp-signature\r\n\r\nsig\r\n--s--\r\n"
	for name, c := range map[string]struct {
		body   string
		signed bool
	}{
		"multipart/signed": {body: signed},
		"8-bit header":     {body: "Subject: Grüße\r\n\r\nbody\r\n"},
		"signed by relayq": {body: eightBitBody, signed: true},
	} {
		t.Run(name, func(t *testing.T) {
			srv := smtptest.NewServer(t, smtptest.No8BitMIME())
			env := eightBitEnvelope("b@example.test", "c@example.test")
			env.Signed = c.signed
			res := deliver(t, testDialer(), []Hop{hopTo(t, srv.Addr())}, env, bodyOf(c.body))
			wantAll(t, res, smtpcodes.Permanent, 0, "5.6.3")
			for _, e := range srv.Events() {
				if e.Stage == smtptest.StageMail {
					t.Errorf("MAIL sent for a message that cannot go: %+v", e)
				}
			}
		})
	}
}

// A message submitted with SMTPUTF8, ASCII envelope and raw UTF-8 header
// fields cannot go as it is to a server without SMTPUTF8. RFC 6531 section
// 3.2: bounce with 5.6.7.
func TestUTF8HeadersBouncedForServerWithoutSMTPUTF8(t *testing.T) {
	body := "From: Jörg <joerg@example.test>\r\nTo: b@example.test\r\nSubject: Grüße\r\n\r\nHallo.\r\n"
	env := envelope("b@example.test")
	env.SMTPUTF8, env.Size = true, int64(len(body))

	srv := smtptest.NewServer(t)
	res := deliver(t, testDialer(), []Hop{hopTo(t, srv.Addr())}, env, bodyOf(body))
	wantAll(t, res, smtpcodes.Permanent, 0, "5.6.7")
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("server without SMTPUTF8 got %d messages with UTF-8 headers", n)
	}

	// With SMTPUTF8 offered it goes, declared.
	utf := smtptest.NewServer(t, smtptest.SMTPUTF8())
	res = deliver(t, testDialer(), []Hop{hopTo(t, utf.Addr())}, env, bodyOf(body))
	wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
	if m := utf.WaitMessages(t, 1, 5*time.Second)[0]; !m.UTF8 || string(m.Data) != body {
		t.Errorf("SMTPUTF8 server: UTF8=%v body %q", m.UTF8, m.Data)
	}

	// Declared SMTPUTF8 but all ASCII: nothing needs it, it goes.
	env.Size = int64(len(testBody))
	res = deliver(t, testDialer(), []Hop{hopTo(t, srv.Addr())}, env, bodyOf(testBody))
	wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
}
