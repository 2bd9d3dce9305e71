package smtpcodes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"os"
	"syscall"
	"testing"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

func serverErr(code int, enh smtp.EnhancedCode, msg string) error {
	return &smtp.SMTPError{Code: code, EnhancedCode: enh, Message: msg}
}

var noEnh = smtp.EnhancedCodeNotSet

func TestClassifyServerReplies(t *testing.T) {
	tests := []struct {
		name  string
		stage Stage
		err   error
		want  Reply
	}{
		{"nil is success", StageData, nil, Reply{Success, 250, "2.0.0", "", ""}},
		{"250 at mail", StageMail, serverErr(250, smtp.EnhancedCode{2, 1, 0}, "ok"), Reply{Success, 250, "2.1.0", "ok", "2.1.0"}},
		{"354 at data start", StageData, serverErr(354, noEnh, "go ahead"), Reply{Success, 354, "2.0.0", "go ahead", ""}},
		{"354 at rcpt is a protocol error", StageRcpt, serverErr(354, noEnh, "huh"), Reply{Transient, 354, "4.5.0", "huh", ""}},
		{"421 at greeting", StageGreeting, serverErr(421, smtp.EnhancedCode{4, 3, 2}, "shutting down"), Reply{Transient, 421, "4.3.2", "shutting down", "4.3.2"}},
		{"421 at rcpt", StageRcpt, serverErr(421, noEnh, "too busy"), Reply{Transient, 421, "4.0.0", "too busy", ""}},
		{"450 at rcpt", StageRcpt, serverErr(450, smtp.EnhancedCode{4, 2, 0}, "Greylisted"), Reply{Transient, 450, "4.2.0", "Greylisted", "4.2.0"}},
		{"451 at data", StageData, serverErr(451, smtp.EnhancedCode{4, 7, 1}, "Greylisted"), Reply{Transient, 451, "4.7.1", "Greylisted", "4.7.1"}},
		{"452 at rcpt", StageRcpt, serverErr(452, smtp.EnhancedCode{4, 5, 3}, "Too many recipients"), Reply{Transient, 452, "4.5.3", "Too many recipients", "4.5.3"}},
		{"452 at mail", StageMail, serverErr(452, noEnh, "Insufficient storage"), Reply{Transient, 452, "4.0.0", "Insufficient storage", ""}},
		{"552 at rcpt is transient", StageRcpt, serverErr(552, smtp.EnhancedCode{5, 2, 2}, "Mailbox full"), Reply{Transient, 552, "4.2.2", "Mailbox full", "5.2.2"}},
		{"552 at data is permanent", StageData, serverErr(552, smtp.EnhancedCode{5, 3, 4}, "Message too big"), Reply{Permanent, 552, "5.3.4", "Message too big", "5.3.4"}},
		{"550 at rcpt", StageRcpt, serverErr(550, smtp.EnhancedCode{5, 1, 1}, "No such user"), Reply{Permanent, 550, "5.1.1", "No such user", "5.1.1"}},
		{"550 without enhanced is not guessed as 5.1.1", StageRcpt, serverErr(550, noEnh, "No such user"), Reply{Permanent, 550, "5.0.0", "No such user", ""}},
		{"550 at mail", StageMail, serverErr(550, smtp.EnhancedCode{5, 7, 1}, "Sender rejected"), Reply{Permanent, 550, "5.7.1", "Sender rejected", "5.7.1"}},
		{"554 at data 5.7.1", StageData, serverErr(554, smtp.EnhancedCode{5, 7, 1}, "Spam"), Reply{Permanent, 554, "5.7.1", "Spam", "5.7.1"}},
		{"554 at greeting is transient", StageGreeting, serverErr(554, noEnh, "No SMTP service here"), Reply{Transient, 554, "4.0.0", "No SMTP service here", ""}},
		{"550 at ehlo", StageHello, serverErr(550, smtp.EnhancedCode{5, 5, 0}, "bad HELO"), Reply{Permanent, 550, "5.5.0", "bad HELO", "5.5.0"}},
		{"535 at auth is transient 4.7.8", StageAuth, serverErr(535, smtp.EnhancedCode{5, 7, 8}, "Authentication credentials invalid"), Reply{Transient, 535, "4.7.8", "Authentication credentials invalid", "5.7.8"}},
		{"535 at auth without enhanced", StageAuth, serverErr(535, noEnh, "bad password"), Reply{Transient, 535, "4.7.0", "bad password", ""}},
		{"454 at auth", StageAuth, serverErr(454, noEnh, "try later"), Reply{Transient, 454, "4.7.0", "try later", ""}},
		{"334 at auth", StageAuth, serverErr(334, noEnh, ""), Reply{Success, 334, "2.7.0", "", ""}},
		{"530 at mail is config, transient", StageMail, serverErr(530, smtp.EnhancedCode{5, 7, 0}, "Authentication required"), Reply{Transient, 530, "4.7.0", "Authentication required", "5.7.0"}},
		{"454 at starttls", StageStartTLS, serverErr(454, noEnh, "TLS not available"), Reply{Transient, 454, "4.7.0", "TLS not available", ""}},
		{"server enhanced class disagreeing with code", StageRcpt, serverErr(451, smtp.EnhancedCode{5, 1, 1}, "odd"), Reply{Transient, 451, "4.1.1", "odd", "5.1.1"}},
		{"invalid enhanced from server", StageRcpt, serverErr(550, smtp.EnhancedCode{9, 9, 9}, "odd"), Reply{Permanent, 550, "5.0.0", "odd", ""}},
		{"NoEnhancedCode", StageRcpt, serverErr(550, smtp.NoEnhancedCode, "x"), Reply{Permanent, 550, "5.0.0", "x", ""}},
		{"multi-line text joined", StageRcpt, serverErr(550, smtp.EnhancedCode{5, 7, 1}, "line one\nline two\r\n"), Reply{Permanent, 550, "5.7.1", "line one line two", "5.7.1"}},
		{"out-of-range code", StageRcpt, serverErr(650, noEnh, "x"), Reply{Transient, 650, "4.5.0", "x", ""}},
		{"wrapped server error", StageRcpt, fmt.Errorf("delivery: rcpt <a@b>: %w", serverErr(550, smtp.EnhancedCode{5, 1, 1}, "No such user")), Reply{Permanent, 550, "5.1.1", "No such user", "5.1.1"}},
		{"double-wrapped 552 at rcpt", StageRcpt, fmt.Errorf("a: %w", fmt.Errorf("b: %w", serverErr(552, noEnh, "full"))), Reply{Transient, 552, "4.0.0", "full", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify(tt.stage, tt.err)
			if got != tt.want {
				t.Errorf("Classify(%s, %v) = %#v, want %#v", tt.stage, tt.err, got, tt.want)
			}
		})
	}
}

// TestClassifyEveryStage checks the class of representative codes at every
// stage, so a new stage-specific rule cannot silently change another stage.
func TestClassifyEveryStage(t *testing.T) {
	stages := []Stage{StageDNS, StageConnect, StageGreeting, StageHello, StageStartTLS, StageAuth, StageMail, StageRcpt, StageData}
	for _, stage := range stages {
		for _, code := range []int{250, 421, 450, 451, 452, 530, 535, 550, 552, 554} {
			got := Classify(stage, serverErr(code, noEnh, "x"))
			want := Permanent
			switch {
			case code < 300:
				want = Success
			case code < 500,
				code == 552 && stage == StageRcpt,
				stage == StageAuth, stage == StageGreeting, code == 530:
				want = Transient
			}
			if got.Class != want {
				t.Errorf("%d at %s: class %s, want %s", code, stage, got.Class, want)
			}
			if got.Enhanced[0] != "?245"[want] {
				t.Errorf("%d at %s: enhanced %q disagrees with class %s", code, stage, got.Enhanced, got.Class)
			}
			if got.Code != code || !got.Remote() {
				t.Errorf("%d at %s: code %d remote %v", code, stage, got.Code, got.Remote())
			}
			if got.SuspendsDestination() != (code == 421) {
				t.Errorf("%d at %s: SuspendsDestination %v", code, stage, got.SuspendsDestination())
			}
		}
	}
}

func TestClassifyLocalErrors(t *testing.T) {
	dnsTemp := &net.DNSError{Err: "server misbehaving", Name: "example.com", IsTemporary: true}
	dnsNotFound := &net.DNSError{Err: "no such host", Name: "nx.example", IsNotFound: true}
	dnsTimeout := &net.DNSError{Err: "i/o timeout", Name: "example.com", IsTimeout: true}
	tests := []struct {
		name  string
		stage Stage
		err   error
		want  string // enhanced code; class is always Transient
	}{
		{"dns servfail", StageDNS, fmt.Errorf("lookup mx: %w", dnsTemp), "4.4.3"},
		{"dns not found", StageDNS, dnsNotFound, "4.4.3"},
		{"dns timeout is still dns", StageDNS, dnsTimeout, "4.4.3"},
		{"context deadline", StageConnect, fmt.Errorf("dial: %w", context.DeadlineExceeded), "4.4.2"},
		{"os deadline", StageData, os.ErrDeadlineExceeded, "4.4.2"},
		{"EOF at greeting", StageGreeting, io.EOF, "4.4.1"},
		{"EOF after ehlo", StageRcpt, fmt.Errorf("rcpt: %w", io.EOF), "4.4.2"},
		{"unexpected EOF in data", StageData, io.ErrUnexpectedEOF, "4.4.2"},
		{"closed conn", StageMail, net.ErrClosed, "4.4.2"},
		{"malformed reply", StageHello, fmt.Errorf("ehlo: %w", textproto.ProtocolError("short response: 25")), "4.5.0"},
		{"plain error at starttls", StageStartTLS, errors.New("smtp: server doesn't support STARTTLS"), "4.7.0"},
		{"unknown", StageData, errors.New("something odd"), "4.0.0"},
		{"context canceled", StageData, context.Canceled, "4.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify(tt.stage, tt.err)
			want := Reply{Transient, 0, tt.want, tt.err.Error(), ""}
			if got != want {
				t.Errorf("got %#v, want %#v", got, want)
			}
			if got.Remote() || got.SuspendsDestination() {
				t.Errorf("a local error must be neither remote nor suspend the destination: %#v", got)
			}
		})
	}
}

func TestClassifyStatusErrors(t *testing.T) {
	inner := serverErr(550, smtp.EnhancedCode{5, 1, 1}, "No such user")
	tests := []struct {
		name string
		err  error
		want Reply
	}{
		{"null MX", Permanentf("5.1.10", "domain %s has a null MX", "example.com"), Reply{Permanent, 0, "5.1.10", "domain example.com has a null MX", ""}},
		{"nxdomain wrapped", fmt.Errorf("route: %w", Permanentf("5.1.2", "no such domain %q", "nx.example")), Reply{Permanent, 0, "5.1.2", `no such domain "nx.example"`, ""}},
		{"class digit forced", Permanentf("4.1.2", "x"), Reply{Permanent, 0, "5.1.2", "x", ""}},
		{"bad code replaced", Transientf("banana", "x"), Reply{Transient, 0, "4.0.0", "x", ""}},
		{"overrides wrapped server error", Transientf("4.7.8", "smarthost auth: %w", inner), Reply{Transient, 0, "4.7.8", "smarthost auth: SMTP error 550: No such user", ""}},
		{"control characters in text", Transientf("4.4.1", "a\r\nb\x00c"), Reply{Transient, 0, "4.4.1", "a b c", ""}},
		{"hand-built without class", &StatusError{Enhanced: "5.1.1", Text: "x"}, Reply{Transient, 0, "4.1.1", "x", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, stage := range []Stage{StageDNS, StageRcpt} {
				if got := Classify(stage, tt.err); got != tt.want {
					t.Errorf("%s: got %#v, want %#v", stage, got, tt.want)
				}
			}
		})
	}
	var smtpErr *smtp.SMTPError
	if !errors.As(Transientf("4.7.8", "auth: %w", inner), &smtpErr) || smtpErr != inner {
		t.Error("Transientf with %w must keep the wrapped error reachable")
	}
	if s := Permanentf("5.1.10", "null MX").Error(); s != "5.1.10 null MX" {
		t.Errorf("Error() = %q", s)
	}
}

func BenchmarkClassify(b *testing.B) {
	errs := []struct {
		stage Stage
		err   error
	}{
		{StageRcpt, fmt.Errorf("rcpt: %w", serverErr(550, smtp.EnhancedCode{5, 1, 1}, "No such user"))},
		{StageData, serverErr(451, noEnh, "Greylisted")},
		{StageConnect, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}},
		{StageData, errors.New("something odd")},
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		e := errs[i%len(errs)]
		_ = Classify(e.stage, e.err)
	}
}
