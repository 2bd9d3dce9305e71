package smtpcodes

import "fmt"

// StatusError is a local error whose meaning the caller has already decided:
// "the domain has a null MX" (5.1.10, RFC 7505) or "NXDOMAIN" (5.1.2) are
// local findings, not server replies, but must bounce rather than be retried.
// Classify honours it before looking at anything it wraps, so a caller can
// wrap a server error (with %w) and still override its class.
type StatusError struct {
	// Class is Transient or Permanent.
	Class Class
	// Enhanced is the RFC 3463 code, class digit agreeing with Class.
	Enhanced string
	// Text describes the problem.
	Text string
	err  error // the formatted error; Unwrap exposes what %w wrapped
}

// Error returns "5.1.10 text": the enhanced code first, as in Reply.String
// for local replies, so logs read the same whichever path produced them.
func (e *StatusError) Error() string { return e.Enhanced + " " + e.Text }

// Unwrap returns the error wrapped with %w, so errors.Is/As still see it.
func (e *StatusError) Unwrap() error { return e.err }

// Permanentf returns an error that Classify turns into a Permanent reply with
// the given enhanced code (forced to class 5; "5.0.0" if unparseable). The
// message is formatted with fmt.Errorf, so %w wraps.
func Permanentf(enhanced, format string, args ...any) error {
	return newStatusError(Permanent, enhanced, format, args...)
}

// Transientf is Permanentf for problems worth retrying; the enhanced code is
// forced to class 4 ("4.0.0" if unparseable).
func Transientf(enhanced, format string, args ...any) error {
	return newStatusError(Transient, enhanced, format, args...)
}

func newStatusError(c Class, enh, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &StatusError{
		Class:    c,
		Enhanced: normalizeEnhanced(enh, c),
		Text:     OneLine(err.Error()),
		err:      err, // errors.As walks on through whatever %w wrapped
	}
}
