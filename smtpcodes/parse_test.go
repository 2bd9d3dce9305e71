package smtpcodes

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

func TestParseReply(t *testing.T) {
	tests := []struct {
		in   string
		want Reply
	}{
		{"451 4.7.1 Greylisted", Reply{Transient, 451, "4.7.1", "Greylisted", "4.7.1"}},
		{"451 4.7.1 Greylisted\r\n", Reply{Transient, 451, "4.7.1", "Greylisted", "4.7.1"}},
		{"250 ok", Reply{Success, 250, "2.0.0", "ok", ""}},
		{"250", Reply{Success, 250, "2.0.0", "", ""}},
		{"354 End data with <CR><LF>.<CR><LF>", Reply{Success, 354, "2.0.0", "End data with <CR><LF>.<CR><LF>", ""}},
		{"550 5.1.1 <bob@example.com>: Recipient address rejected: User unknown", Reply{Permanent, 550, "5.1.1", "<bob@example.com>: Recipient address rejected: User unknown", "5.1.1"}},
		{"250-a\r\n250 b", Reply{Success, 250, "2.0.0", "a b", ""}},
		{"250-a\n250 b\n", Reply{Success, 250, "2.0.0", "a b", ""}},
		{"550-5.7.1 Our system has detected\r\n550-5.7.1 an unusual rate\r\n550 5.7.1 of mail.", Reply{Permanent, 550, "5.7.1", "Our system has detected an unusual rate of mail.", "5.7.1"}},
		{"421-4.7.0 Try again later,\r\n421 4.7.0 closing connection.", Reply{Transient, 421, "4.7.0", "Try again later, closing connection.", "4.7.0"}},
		{"250-\r\n250 x", Reply{Success, 250, "2.0.0", "x", ""}},
		{"451 5.7.1 class disagrees", Reply{Transient, 451, "4.7.1", "class disagrees", "5.7.1"}},
		{"451 4.7.1", Reply{Transient, 451, "4.7.1", "", "4.7.1"}},
		{"451 4.7.1x text", Reply{Transient, 451, "4.0.0", "4.7.1x text", ""}},
		{"451 4.1234.1 text", Reply{Transient, 451, "4.0.0", "4.1234.1 text", ""}},
		{"451 tab\there", Reply{Transient, 451, "4.0.0", "tab here", ""}},
		{"550 5.7.1 naïve ünïcode", Reply{Permanent, 550, "5.7.1", "naïve ünïcode", "5.7.1"}},
	}
	for _, tt := range tests {
		got, err := ParseReply(tt.in)
		if err != nil {
			t.Errorf("ParseReply(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseReply(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
		checkReplyInvariants(t, tt.in, got)
	}
}

func TestParseReplyRejects(t *testing.T) {
	for _, in := range []string{
		"", "\r\n", "25", "abc", "150 too low", "650 too high", "260 bad second digit",
		"25x nope", "2500 four digits", "250-only continuation", "250-a\r\n251 b",
		"250 a\r\n250 b", "250-a\r\n\r\n250 b", " 250 leading space", "250_x",
	} {
		if r, err := ParseReply(in); err == nil {
			t.Errorf("ParseReply(%q) = %#v, want an error", in, r)
		}
	}
}

func TestReplyString(t *testing.T) {
	tests := []struct {
		r    Reply
		want string
	}{
		{Reply{Transient, 451, "4.7.1", "Greylisted", "4.7.1"}, "451 4.7.1 Greylisted"},
		{Reply{Transient, 0, "4.4.1", "connection refused", ""}, "4.4.1 connection refused"},
		{Reply{Success, 250, "2.0.0", "", "2.0.0"}, "250 2.0.0"},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.r, got, tt.want)
		}
	}
}

// Quote gives the reply as sent: a 552 at RCPT is transient (4.2.2) but
// said 5.2.2, and a server that gave no enhanced code gets none.
func TestReplyQuote(t *testing.T) {
	tests := []struct {
		r           Reply
		quote, text string
	}{
		{Classify(StageRcpt, serverErr(552, smtp.EnhancedCode{5, 2, 2}, "Mailbox full")), "552 5.2.2 Mailbox full", "552 4.2.2 Mailbox full"},
		{Classify(StageData, serverErr(500, smtp.NoEnhancedCode, "what")), "500 what", "500 5.0.0 what"},
		{Classify(StageRcpt, serverErr(451, smtp.EnhancedCode{5, 1, 1}, "odd")), "451 5.1.1 odd", "451 4.1.1 odd"},
		{Classify(StageConnect, Transientf("4.4.1", "connection refused")), "4.4.1 connection refused", "4.4.1 connection refused"},
	}
	for _, tt := range tests {
		if got := tt.r.Quote(); got != tt.quote {
			t.Errorf("%#v.Quote() = %q, want %q", tt.r, got, tt.quote)
		}
		if got := tt.r.String(); got != tt.text {
			t.Errorf("%#v.String() = %q, want %q", tt.r, got, tt.text)
		}
	}
}

// checkReplyInvariants is shared by the table tests and the fuzzer.
func checkReplyInvariants(t *testing.T, in string, r Reply) {
	t.Helper()
	if r.Code < 200 || r.Code > 559 {
		t.Fatalf("ParseReply(%q): code %d out of range", in, r.Code)
	}
	if _, ok := parseEnhanced(r.Enhanced); !ok || int(r.Enhanced[0]-'0') != classDigit(r.Class) {
		t.Fatalf("ParseReply(%q): enhanced %q invalid for class %s", in, r.Enhanced, r.Class)
	}
	if !utf8.ValidString(r.Text) || strings.IndexFunc(r.Text, unicode.IsControl) >= 0 || strings.TrimSpace(r.Text) != r.Text {
		t.Fatalf("ParseReply(%q): text %q is not one clean line", in, r.Text)
	}
	again, err := ParseReply(r.Quote())
	if err != nil || again != r {
		t.Fatalf("ParseReply(%q) = %#v, but its Quote %q parses to %#v, %v", in, r, r.Quote(), again, err)
	}
	again, err = ParseReply(r.String())
	if again.Sent = r.Sent; err != nil || again != r {
		t.Fatalf("ParseReply(%q) = %#v, but its String %q parses to %#v, %v", in, r, r.String(), again, err)
	}
}

func FuzzParseReply(f *testing.F) {
	for _, s := range []string{
		"451 4.7.1 Greylisted", "250-a\r\n250 b", "250", "550 5.1.1 x\r\n", "421-4.7.0 a\n421 4.7.0 b",
		"451 5.7.1 x", "250-\r\n250 ", "451 \x00\r\x7f", "550 4.1234.1 x", "550 \xff\xfe",
		"421-\n421 2.0.0", // the code on a line after an empty one

	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r, err := ParseReply(in)
		if err != nil {
			return
		}
		checkReplyInvariants(t, in, r)
	})
}

func TestStatusOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"550 5.1.1 No such user", "5.1.1"},
		{"451 4.7.1 Greylisted", "4.7.1"},
		{"4.4.1 connection refused", "4.4.1"},
		{"250 OK", "2.0.0"},
		{"garbage", ""},
		{"", ""},
	} {
		got, ok := StatusOf(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("StatusOf(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}
