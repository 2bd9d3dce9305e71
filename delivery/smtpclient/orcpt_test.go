package smtpclient

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"testing"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/smtpcodes"
)

// syncBuffer is a transcript written by the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An ORCPT relayq received is passed to the next hop in a form it can
// decode back to the same address: rfc822 when it is printable ASCII
// (RFC 3461 xtext), otherwise the utf-8 type (RFC 6533 section 3) as
// utf-8-addr-unitext when the transaction uses SMTPUTF8 and as
// utf-8-addr-xtext when it does not, even to a server that offers SMTPUTF8.
// An address that is not UTF-8 cannot be carried by the utf-8 type and is
// left out rather than changed.
func TestORCPTOnTheWire(t *testing.T) {
	for _, tc := range []struct {
		name      string
		smtputf8  bool // the message needs SMTPUTF8
		orcpt     string
		wantParam string // "" means no ORCPT
		wantOrig  string // as the next hop decodes it
	}{
		{"ascii", false, "rfc822;Bob+x@example.test", "ORCPT=rfc822;Bob+2Bx@example.test", "Bob+x@example.test"},
		{"UTF-8 in a 7-bit transaction", false, "rfc822;zoë@example.test", `ORCPT=utf-8;zo\x{EB}@example.test`, "zoë@example.test"},
		{"UTF-8 in an SMTPUTF8 transaction", true, "rfc822;zoë@example.test", "ORCPT=utf-8;zoë@example.test", "zoë@example.test"},
		{"utf-8 type with a tab", false, "utf-8;a\tb@example.test", `ORCPT=utf-8;a\x{09}b@example.test`, "a\tb@example.test"},
		{"not UTF-8", false, "rfc822;zo\xebx@example.test", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &dsnServer{}
			srv := smtp.NewServer(b)
			srv.EnableDSN, srv.EnableSMTPUTF8 = true, true
			var wire syncBuffer
			srv.Debug = &wire
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })

			env := Envelope{From: "sender@example.test", SMTPUTF8: tc.smtputf8, Size: int64(len(testBody)),
				Recipients: []RcptReq{{Address: "a@example.test", ORCPT: tc.orcpt, Notify: []string{"FAILURE"}}}}
			res := deliver(t, testDialer(), []Hop{hopTo(t, ln.Addr().String())}, env, bodyOf(testBody))
			wantAll(t, res, smtpcodes.Success, 250, "2.0.0")

			var rcpt string
			for _, l := range strings.Split(wire.String(), "\n") {
				if strings.HasPrefix(l, "RCPT TO:") {
					rcpt = strings.TrimRight(l, "\r")
				}
			}
			want := "RCPT TO:<a@example.test> NOTIFY=FAILURE"
			if tc.wantParam != "" {
				want += " " + tc.wantParam
			}
			if rcpt != want {
				t.Errorf("sent %q\nwant %q", rcpt, want)
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			if len(b.rcpt) != 1 || b.rcpt[0].OriginalRecipient != tc.wantOrig {
				t.Errorf("next hop decoded ORCPT as %+v, want %q", b.rcpt, tc.wantOrig)
			}
		})
	}
}
