package smtptest

import (
	"strings"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in   string
		want Rule
	}{
		{"rcpt:nobody@example.test=550 5.1.1 No such user", Rule{Stage: StageRcpt, Match: "nobody@example.test", Code: 550, Enhanced: smtp.EnhancedCode{5, 1, 1}, Text: "No such user"}},
		{"greeting=421 4.3.2 Busy", Rule{Stage: StageGreeting, Code: 421, Enhanced: smtp.EnhancedCode{4, 3, 2}, Text: "Busy"}},
		{"RCPT:bob@#2=451 4.3.0  Try   later ", Rule{Stage: StageRcpt, Match: "bob@", Attempt: 2, Code: 451, Enhanced: smtp.EnhancedCode{4, 3, 0}, Text: "Try   later"}},
		{"rcpt=552", Rule{Stage: StageRcpt, Code: 552}},
		{"mail=451 Try later", Rule{Stage: StageMail, Code: 451, Text: "Try later"}},
		{"data=delay 1.5s", Rule{Stage: StageData, Delay: 1500 * time.Millisecond}},
		{"data:carol@=delay 2s drop", Rule{Stage: StageData, Match: "carol@", Delay: 2 * time.Second, Drop: true}},
		{"ehlo=DROP", Rule{Stage: StageEHLO, Drop: true}},
		{"data=delay 30s 250 2.0.0 Queued as X", Rule{Stage: StageData, Delay: 30 * time.Second, Code: 250, Enhanced: smtp.EnhancedCode{2, 0, 0}, Text: "Queued as X"}},
		{"rcpt:gone@=250 then bounce 5.1.1 after 2s", Rule{Stage: StageRcpt, Match: "gone@", Code: 250, Then: Then{Report: ReportBounce, Status: smtp.EnhancedCode{5, 1, 1}, After: 2 * time.Second}}},
		{"rcpt:gone@=250 2.1.5 OK then bounce 5.2.2 Mailbox full", Rule{Stage: StageRcpt, Match: "gone@", Code: 250, Enhanced: smtp.EnhancedCode{2, 1, 5}, Text: "OK", Then: Then{Report: ReportBounce, Status: smtp.EnhancedCode{5, 2, 2}, Text: "Mailbox full"}}},
		{"rcpt:angry@=250 then complain abuse after 2s", Rule{Stage: StageRcpt, Match: "angry@", Code: 250, Then: Then{Report: ReportComplaint, Feedback: FeedbackAbuse, After: 2 * time.Second}}},
		{"rcpt=250 THEN Complain Not-Spam", Rule{Stage: StageRcpt, Code: 250, Then: Then{Report: ReportComplaint, Feedback: FeedbackNotSpam}}},
	}
	for _, tc := range tests {
		got, err := ParseRule(tc.in)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseRule(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestParseRuleErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"rcpt",
		"rcpt=",
		"quit=421 4.0.0 Bye",
		"auth=535",
		"rcpt:=550",
		"rcpt#0=550",
		"rcpt#x=550",
		"rcpt#=550",
		"rcpt=55",
		"rcpt=354 Go on",
		"rcpt=650",
		"rcpt=550 4.1.1 Class mismatch",
		"rcpt=550 5.1 Short enhanced code",
		"rcpt=550 5.1.1000 Too long",
		"rcpt=drop 550",
		"rcpt=delay",
		"rcpt=delay -1s",
		"rcpt=delay 2h",
		"rcpt=delay soon",
		"rcpt:a b=550",
		"rcpt=250 then bounce 4.1.1",
		"rcpt=250 then bounce",
		"rcpt=250 then bounce 5.1.1 after soon",
		"rcpt=250 then bounce 5.1.1 after 48h",
		"rcpt=250 then complain",
		"rcpt=250 then complain spam",
		"rcpt=250 then complain abuse now",
		"rcpt=550 then bounce 5.1.1",
		"data=250 then bounce 5.1.1",
		"mail=250 then complain abuse",
		"rcpt=550 5.1.1 bad\rtext",
	} {
		if r, err := ParseRule(in); err == nil {
			t.Errorf("ParseRule(%q) = %+v, want an error", in, r)
		}
	}
}

func TestRuleStringRoundTrip(t *testing.T) {
	for _, in := range []string{
		"rcpt:nobody@example.test=550 5.1.1 No such user",
		"rcpt:bob@#3=421 4.3.2 Busy",
		"data=delay 1m30s drop",
		"greeting=delay 250ms",
		"mail=451",
	} {
		r, err := ParseRule(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.String(); got != in {
			t.Errorf("String() = %q, want %q", got, in)
		}
	}
}

// FuzzParseRule checks that parsing never panics and that whatever parses
// prints back to a rule that parses to the same thing.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		"rcpt:nobody@example.test=550 5.1.1 No such user",
		"greeting=421 4.3.2 Busy",
		"rcpt:bob@#2=451 4.3.0 Try later",
		"data=delay 1.5s drop",
		"data=delay 30s 250 2.0.0 Queued",
		"ehlo=drop",
		"mail=451",
		"rcpt#1=5x0",
		"rcpt:#=",
		"rcpt:gone@=250 then bounce 5.1.1 after 2s",
		"rcpt:angry@=250 then complain abuse after 2s",
		// Lower-casing changes these characters' byte lengths; "after" was
		// once found in the lowered text and cut from the original.
		"rcpt=250 then bounce 5.1.1 \u0130\u0130 after 2s",
		"rcpt=250 then bounce 5.1.1 \xff\xff after 2s",
		"rcpt=250 then bounce 5.1.1 after after 2s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("ParseRule(%q) returned an invalid rule: %v", s, err)
		}
		printed := r.String()
		r2, err := ParseRule(printed)
		if err != nil {
			t.Fatalf("ParseRule(%q) -> %q does not parse: %v", s, printed, err)
		}
		if r2 != r {
			t.Fatalf("round trip of %q: %+v, then %q gives %+v", s, r, printed, r2)
		}
		if strings.ContainsAny(printed, "\r\n") {
			t.Fatalf("rule %q prints with a line break", s)
		}
	})
}
