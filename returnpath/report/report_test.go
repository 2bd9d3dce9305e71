package report

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func sample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "returnpath", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseSamples(t *testing.T) {
	cases := []struct {
		file               string
		kind               Kind
		rcpt               string // DSN Final-Recipient, or complaint's recipient
		action             Action
		status, replyStart string
		feedback           string
	}{
		{"postfix-dsn.eml", KindDSN, "gone@example.net", ActionFailed, "5.1.1",
			"550 5.1.1 <gone@example.net>: Recipient address rejected: User unknown in local recipient table", ""},
		{"postfix-success.eml", KindDSN, "carol@example.net", ActionDelivered, "2.0.0", "example.net", ""},
		{"postfix-delayed.eml", KindDSN, "slow@example.net", ActionDelayed, "4.4.1", "connect to mx.example.net", ""},
		{"m365-dsn.eml", KindDSN, "gone@contoso.com", ActionFailed, "5.1.10", "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient gone@contoso.com", ""},
		{"gmail-dsn.eml", KindDSN, "gone@gmail.com", ActionFailed, "5.1.1", "550-5.1.1 The email account that you tried to reach does not exist. Please try 550-5.1.1", ""},
		{"exim-text.eml", KindBounce, "", 0, "5.1.1", "550 5.1.1 <gone@example.com>: Recipient address rejected", ""},
		{"yahoo-text.eml", KindBounce, "", 0, "5.0.0", "", ""},
		{"yahoo-arf.eml", KindFeedback, "annoyed@yahoo.com", 0, "", "", "abuse"},
		{"outlook-arf.eml", KindFeedback, "reader@outlook.com", 0, "", "", "abuse"},
		{"fraud-arf.eml", KindFeedback, "victim@isp.example", 0, "", "", "fraud"},
		{"gmail-vacation.eml", KindAutoReply, "", 0, "", "", ""},
		{"exchange-oof.eml", KindAutoReply, "", 0, "", "", ""},
		{"debian-vacation.eml", KindAutoReply, "", 0, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			r, err := Parse(sample(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if r.Kind != c.kind {
				t.Fatalf("kind %v, want %v (%+v)", r.Kind, c.kind, r)
			}
			switch c.kind {
			case KindDSN:
				if len(r.Recipients) != 1 {
					t.Fatalf("%d recipients, want 1: %+v", len(r.Recipients), r.Recipients)
				}
				got := r.Recipients[0]
				if got.Final != c.rcpt || got.Action != c.action || got.Status != c.status || !strings.HasPrefix(got.Reply, c.replyStart) {
					t.Errorf("recipient %+v, want %s action %d status %s reply %q...", got, c.rcpt, c.action, c.status, c.replyStart)
				}
			case KindBounce:
				if r.Status != c.status || !strings.HasPrefix(r.Reply, c.replyStart) {
					t.Errorf("status %q reply %q, want %q %q...", r.Status, r.Reply, c.status, c.replyStart)
				}
			case KindFeedback:
				if r.FeedbackType != c.feedback || r.OriginalRcptTo != c.rcpt {
					t.Errorf("feedback %q for %q, want %q for %q", r.FeedbackType, r.OriginalRcptTo, c.feedback, c.rcpt)
				}
			}
		})
	}
}

func TestParseClassifiesEdgeCases(t *testing.T) {
	cases := []struct {
		name, msg string
		kind      Kind
		status    string
	}{
		{"plain mail is nothing", "From: a@example.org\r\nSubject: hello\r\n\r\nhi there\r\n", KindUnknown, ""},
		{"mailer-daemon with a 4.x.x only is still final", "From: MAILER-DAEMON@x.example\r\nSubject: oops\r\n\r\n421 4.4.2 timeout\r\n", KindBounce, "5.0.0"},
		{"a text warning with a 4.x.x is a delay", "From: MAILER-DAEMON@x.example\r\nSubject: oops\r\n\r\nThis is a warning only. 451 4.4.7 still trying\r\n", KindDelay, "4.4.7"},
		{"a version number is no status", "From: MAILER-DAEMON@x.example\r\n\r\nPostfix 5.1.10.2 said 5.1.1x no\r\n", KindBounce, "5.0.0"},
		{"status in text without bounce headers is no bounce", "From: a@example.org\r\n\r\nremote said 550 5.2.2 mailbox full\r\n", KindUnknown, ""},
		{"a person quoting a section number", "From: Reader <reader@example.net>\r\nSubject: Re: Your order\r\n\r\nPer section 5.1.2 of your terms, stop.\r\n", KindUnknown, ""},
		{"a reply to a bounce is a person's", "From: reader@example.net\r\nSubject: Re: Undeliverable: Your order\r\n\r\n550 5.1.1 ha\r\n", KindUnknown, ""},
		{"X-Failed-Recipients makes a bounce", "From: robot@x.example\r\nX-Failed-Recipients: a@y.example\r\n\r\n550 5.1.1 no\r\n", KindBounce, "5.1.1"},
		{"auto-submitted no is not an auto-reply", "From: a@example.org\r\nAuto-Submitted: no\r\n\r\nhi\r\n", KindUnknown, ""},
		{"DSN wins over an auto-reply header", "Auto-Submitted: auto-replied\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; x\r\n\r\nFinal-Recipient: rfc822; x@y.example\r\nAction: failed\r\nStatus: 5.7.1\r\n\r\n--b--\r\n", KindDSN, ""},
	}
	for _, c := range cases {
		r, err := Parse([]byte(c.msg))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.Kind != c.kind || r.Status != c.status {
			t.Errorf("%s: kind %v status %q, want %v %q", c.name, r.Kind, r.Status, c.kind, c.status)
		}
	}
}

func TestParseDSNWithoutRecipientBlocksIsEmpty(t *testing.T) {
	msg := "Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; x\r\n\r\n--b--\r\n"
	r, _ := Parse([]byte(msg))
	if r.Kind != KindDSN || len(r.Recipients) != 0 {
		t.Fatalf("got %+v, want a DSN naming no recipient", r)
	}
}

func TestParseManyRecipientsIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; x\r\n")
	for b.Len() < 1<<20 {
		b.WriteString("\r\nFinal-Recipient: rfc822; x@y.example\r\nAction: failed\r\nStatus: 5.1.1\r\n")
	}
	b.WriteString("\r\n--b--\r\n")
	r, _ := Parse([]byte(b.String()))
	if r.Kind != KindDSN || len(r.Recipients) == 0 || len(r.Recipients) > maxRecipients {
		t.Fatalf("%d recipients from a 1 MiB report, want 1..%d", len(r.Recipients), maxRecipients)
	}
}

// FuzzParse feeds Parse arbitrary bytes: it never panics, never answers a
// malformed status (nor does Specific on what it read), keeps a bounded
// text, and allocates at most a bounded multiple of its input.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "returnpath", "*.eml"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte("Content-Type: multipart/report; boundary=x\r\n\r\n--x\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := Parse(b)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(64*len(b))+8<<20 {
			t.Fatalf("Parse of %d bytes allocated %d", len(b), alloc)
		}
		if err != nil {
			return
		}
		if r.Status != "" && validStatus(r.Status) == "" {
			t.Fatalf("bounce status %q is not a status code", r.Status)
		}
		for _, rc := range r.Recipients {
			if rc.Status != "" && validStatus(rc.Status) == "" {
				t.Fatalf("recipient status %q is not a status code", rc.Status)
			}
		}
		if len(r.Recipients) > maxRecipients {
			t.Fatalf("%d recipients", len(r.Recipients))
		}
		if len(r.Text) > maxSignBytes {
			t.Fatalf("text of %d bytes kept", len(r.Text))
		}
		if s, _ := Specific(r.Reply, r.Text); s != "" && (validStatus(s) == "" || s[0] != '5') {
			t.Fatalf("specific status %q is not a permanent status code", s)
		}
	})
}

// Specific reads the status a generic 5.0.0 failure really has from the
// texts real MTAs write.
func TestSpecificStatusFromText(t *testing.T) {
	cases := []struct{ origin, text, want string }{
		{"Exim, no router accepts the address", "  gone@example.com\n    Unrouteable address\n", "5.1.0"},
		{"Exim, :fail: in a redirect router", "  gone@example.com\n    Unknown user\n", "5.1.1"},
		{"Exim relaying Postfix's refusal", "550 5.1.1 <gone@example.net>: Recipient address rejected: User unknown in virtual mailbox table", "5.1.1"},
		{"Postfix, without its enhanced code", "550 <gone@example.net>: Recipient address rejected: User unknown in local recipient table", "5.1.1"},
		{"Postfix, no such domain", "Host or domain name not found. Name service error for name=example.invalid type=A: Host not found", "5.1.2"},
		{"Gmail", "550-5.1.1 The email account that you tried to reach does not exist. Please try", "5.1.1"},
		{"Gmail, the words alone", "The email account that you tried to reach does not exist.", "5.1.1"},
		{"Exchange", "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient gone@contoso.com not found by SMTP address lookup", "5.1.10"},
		{"Exchange, the words alone", "Remote Server returned 'RESOLVER.ADR.RecipientNotFound; not found'", "5.1.10"},
		{"Yahoo", "554: delivery error: dd This user doesn't have a yahoo.com account (gone@yahoo.com) [0]", "5.1.1"},
		{"a policy refusal says nothing more", "550 Administrative prohibition", ""},
		{"5.0.0 itself says nothing more", "550 5.0.0 rejected", ""},
		{"a temporary code is not a permanent reason", "451 4.1.1 try later", ""},
	}
	for _, c := range cases {
		if got, _ := Specific(c.text); got != c.want {
			t.Errorf("%s: %q gives %q, want %q", c.origin, c.text, got, c.want)
		}
	}
}

// Words in the returned copy of the original message are not the
// reporting MTA's.
func TestParseTextStopsAtTheReturnedCopy(t *testing.T) {
	msg := "From: MAILER-DAEMON@x.example\r\nSubject: failure notice\r\n\r\nSorry.\r\n\r\n" +
		"--- Below this line is a copy of the message.\r\n\r\nSubject: unknown user stories\r\n\r\nour unknown user story\r\n"
	r, err := Parse([]byte(msg))
	if err != nil || r.Kind != KindBounce {
		t.Fatalf("%+v %v", r, err)
	}
	if got, _ := Specific(r.Reply, r.Text); got != "" {
		t.Errorf("the returned copy's words gave %q (text %q)", got, r.Text)
	}
}
