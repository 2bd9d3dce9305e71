package smtpcodes

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/textproto"
	"os"
	"strings"
	"syscall"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// Classify says what err, met at stage of an SMTP transaction, means for the
// recipients it applies to. nil is success (250 2.0.0).
//
// Server replies (*smtp.SMTPError, found with errors.As because our own code
// wraps) go by their code: 2xx success, 3xx success where the protocol
// expects an intermediate reply (354 at DATA, 334 at AUTH), 4xx transient,
// 5xx permanent, with these exceptions, all transient:
//   - 552 at RCPT: RFC 5321 §4.5.3.1.10 says a server that runs out of room
//     for recipients may answer 552, and the client must then treat it as
//     temporary and send the remaining recipients later.
//   - any 5xx at AUTH, and 530 anywhere (RFC 4954 §6 "authentication
//     required"): a smarthost rejecting our credentials is a configuration
//     problem of ours, not a property of the recipient. Bouncing would lose
//     the mail while the operator fixes the password; retrying until the
//     queue lifetime runs out does not. 535 therefore becomes 4.7.8.
//   - 5xx at the greeting: the server refused the session before it heard of
//     our recipients (Postfix likewise skips such hosts by default,
//     smtp_skip_5xx_greeting), so another host or a later try may succeed.
//
// The enhanced code is the server's when valid (class digit forced to agree
// with the class), else X.0.0 (X.7.0 for AUTH and STARTTLS); detail such as
// 5.1.1 is never guessed.
//
// Local errors are transient with synthesized codes (RFC 3463 §3.5, §3.8):
// a *net.DNSError is 4.4.3; timeouts (net.Error, context.DeadlineExceeded)
// 4.4.2; refused and unreachable 4.4.1 ("no answer from host"); a connection
// reset or closed (EOF) is 4.4.1 before the greeting and 4.4.2 ("bad
// connection", it was established but failed) after; TLS and certificate
// errors 4.7.5 ("cryptographic failure"; RFC 7672 §2.2 wants delivery to a
// host whose certificate cannot be verified to be deferred, not bounced);
// a malformed reply 4.5.0; anything else 4.0.0 (4.7.0 at STARTTLS).
// A *StatusError made by Permanentf or Transientf wins over all of these.
func Classify(stage Stage, err error) Reply {
	if err == nil {
		return Reply{Class: Success, Code: 250, Enhanced: "2.0.0"}
	}
	var se *StatusError
	if errors.As(err, &se) {
		c := se.Class
		if c != Permanent {
			c = Transient // a hand-built StatusError without a class must not look like success
		}
		return Reply{Class: c, Enhanced: normalizeEnhanced(se.Enhanced, c), Text: OneLine(se.Text)}
	}
	var smtpErr *smtp.SMTPError
	if errors.As(err, &smtpErr) {
		return classifyServer(stage, smtpErr)
	}
	return classifyLocal(stage, err)
}

func classifyServer(stage Stage, e *smtp.SMTPError) Reply {
	c, derived := serverClass(stage, e.Code)
	ec := e.EnhancedCode
	enh, sent := enhanced{ec[0], ec[1], ec[2]}, ""
	if enh.valid() {
		sent = enh.String()
	} else {
		enh = derived
	}
	return Reply{Class: c, Code: e.Code, Enhanced: enh.withClass(c).String(), Text: OneLine(e.Message), Sent: sent}
}

// serverClass maps a reply code at a stage to a class, and gives the
// enhanced code to use when the server sent none.
func serverClass(stage Stage, code int) (Class, enhanced) {
	security := stage == StageAuth || stage == StageStartTLS
	derive := func(c Class) enhanced {
		if security {
			return enhanced{subject: 7}.withClass(c)
		}
		return enhanced{}.withClass(c)
	}
	switch {
	case code >= 200 && code <= 299:
		return Success, derive(Success)
	case code >= 300 && code <= 399:
		if stage == StageData || stage == StageAuth {
			return Success, derive(Success)
		}
		// An intermediate reply where a final one was due is a protocol
		// error (RFC 5321 §4.2.1); the server may behave next time.
		return Transient, enhanced{4, 5, 0}
	case code >= 400 && code <= 499:
		return Transient, derive(Transient)
	case code >= 500 && code <= 599:
		switch {
		case code == 552 && stage == StageRcpt,
			stage == StageGreeting:
			return Transient, derive(Transient)
		case stage == StageAuth, code == 530:
			return Transient, enhanced{4, 7, 0}
		}
		return Permanent, derive(Permanent)
	}
	return Transient, enhanced{4, 5, 0} // not a reply code at all
}

func classifyLocal(stage Stage, err error) Reply {
	local := func(enh enhanced) Reply {
		return Reply{Class: Transient, Enhanced: enh.String(), Text: OneLine(err.Error())}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return local(enhanced{4, 4, 3})
	}
	if isTimeout(err) {
		return local(enhanced{4, 4, 2})
	}
	if isTLS(err) {
		return local(enhanced{4, 7, 5})
	}
	if isUnreachable(err) {
		return local(enhanced{4, 4, 1})
	}
	if isConnectionLost(err) {
		if stage == StageConnect || stage == StageGreeting || stage == StageDNS {
			return local(enhanced{4, 4, 1})
		}
		return local(enhanced{4, 4, 2})
	}
	var protoErr textproto.ProtocolError
	if errors.As(err, &protoErr) {
		return local(enhanced{4, 5, 0})
	}
	if stage == StageStartTLS {
		return local(enhanced{4, 7, 0})
	}
	return local(enhanced{4, 0, 0})
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isUnreachable(err error) bool {
	for _, target := range []error{
		syscall.ECONNREFUSED, syscall.EHOSTUNREACH, syscall.ENETUNREACH,
		syscall.EHOSTDOWN, syscall.ENETDOWN,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

func isConnectionLost(err error) bool {
	for _, target := range []error{
		io.EOF, io.ErrUnexpectedEOF, net.ErrClosed,
		syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// isTLS recognises handshake and certificate failures. crypto/tls reports
// alerts as *net.OpError{Op: "remote error"/"local error"} around an
// unexported type, and many handshake failures are plain errors, so after
// the typed checks the "tls: "/"x509: " message prefixes that crypto/tls
// and crypto/x509 use throughout are the only reliable sign left.
func isTLS(err error) bool {
	var (
		certErr    *tls.CertificateVerificationError
		recErr     tls.RecordHeaderError
		alertErr   tls.AlertError
		authErr    x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		opErr      *net.OpError
	)
	switch {
	case errors.As(err, &certErr), errors.As(err, &recErr), errors.As(err, &alertErr),
		errors.As(err, &authErr), errors.As(err, &hostErr), errors.As(err, &invalidErr):
		return true
	case errors.As(err, &opErr) && (opErr.Op == "remote error" || opErr.Op == "local error"):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "tls: ") || strings.Contains(msg, "x509: ")
}
