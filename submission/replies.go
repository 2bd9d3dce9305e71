package submission

import smtp "github.com/relayq/relayq/internal/gosmtp"

// go-smtp turns only an unwrapped *smtp.SMTPError into a reply with its own
// code; any other error becomes a generic 451 (MAIL/RCPT) or 554 (DATA). So
// every refusal we mean is spelled out here.
//
// The exported ones are also the HTTP API's refusals (httpsubmit), so both
// protocols give the same reply and the same metrics reason; callers must
// not modify them.
var (
	// ErrAuthRequired is RFC 4954 section 6's 530 5.7.0: relaying needs AUTH.
	ErrAuthRequired = &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}
	// RFC 5321 section 3.6.2 / RFC 3463 5.7.1: not allowed to relay.
	errRelayDenied = &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Relay access denied"}
	// RFC 3463 4.3.0: the queue could not persist the message; the client should retry.
	errQueueUnavailable = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Requested action aborted: local error in processing, try again later"}
	// ErrTooBig is the size refusal (RFC 5321 section 4.5.3.1.10, RFC 3463
	// 5.3.4).
	ErrTooBig = &smtp.SMTPError{Code: 552, EnhancedCode: smtp.EnhancedCode{5, 3, 4}, Message: "Message size exceeds fixed maximum message size"}
	// RFC 5321 section 2.3.8: CR and LF only as CRLF. Refusing bare ones closes
	// the SMTP smuggling hole (CVE-2023-51764 family).
	errBareNewline = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Message contains bare CR or LF, refused (RFC 5321 section 2.3.8)"}
	// A DATA line longer than the server accepts.
	errLineTooLong  = &smtp.SMTPError{Code: 552, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "Line too long"}
	errBadRecipient = &smtp.SMTPError{Code: 553, EnhancedCode: smtp.EnhancedCode{5, 1, 3}, Message: "Recipient address must be user@domain"}
	errBadSender    = &smtp.SMTPError{Code: 553, EnhancedCode: smtp.EnhancedCode{5, 1, 7}, Message: "Sender address must be user@domain or <>"}
	// RFC 4954 section 6: 535 5.7.8 Authentication credentials invalid.
	errAuthFailed = &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "Authentication credentials invalid"}
	// Too many failures from this address: temporary, so a legitimate client retries later.
	errAuthLocked = &smtp.SMTPError{Code: 454, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "Too many authentication failures, try again later"}
	// The DATA upload broke off (timeout or lost connection); the session
	// ends, as RFC 5321 section 4.5.3.2 asks after a timeout.
	errIncomplete = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 4, 2}, Message: "Timeout or connection lost during DATA, closing connection"}
	// The message could not be DKIM-signed for its From: domain; it is not
	// queued unsigned, and the client should try again.
	errSigningFailed = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Requested action aborted: message could not be signed, try again later"}
	// RFC 5321 section 4.1.4: no MAIL while a transaction is open.
	errNestedMail = &smtp.SMTPError{Code: 503, EnhancedCode: smtp.EnhancedCode{5, 5, 1}, Message: "Nested MAIL command"}
)
