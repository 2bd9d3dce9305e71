package submission

// RejectReason says why the server refused a command, a message or a
// connection. Observer.Rejected receives one; metrics uses it as a label
// value, so every reason is one of the constants below.
type RejectReason string

// Refusals inside a mail transaction, each the verdict on a message.
const (
	RejectRelay       RejectReason = "relay"        // not allowed to relay (MAIL 530, RCPT 554)
	RejectSyntax      RejectReason = "syntax"       // bad sender or recipient address
	RejectSize        RejectReason = "size"         // declared or actual size over the limit
	RejectStorage     RejectReason = "storage"      // the queue could not persist it (451)
	RejectBareNewline RejectReason = "bare_newline" // bare CR or LF in the body (550 5.7.0)
	RejectLineLength  RejectReason = "line_length"  // a body line over the limit
	// RejectSigning is a message the Signer could not sign (451): it is
	// refused, never queued unsigned.
	RejectSigning RejectReason = "signing"
	// RejectPreflight is a message a stream's preflight check refused
	// (550 5.7.x, preflight.go).
	RejectPreflight RejectReason = "preflight"
	// RejectFromDomain is a From: domain the sender's tenant may not send
	// as (550 5.7.1).
	RejectFromDomain RejectReason = "from_domain"
	// RejectQuota is a message over its tenant's quota (452 4.7.1).
	RejectQuota RejectReason = "quota"
	// RejectPaused is mail of a tenant paused for its bounce or complaint
	// rate (451 4.7.1 at MAIL).
	RejectPaused RejectReason = "paused"
)

// Refusals of a command or a connection, before or beside any message.
const (
	// RejectSequence is a MAIL while a transaction is open (503): the open
	// transaction goes on and gets its own verdict.
	RejectSequence    RejectReason = "sequence"
	RejectAuth        RejectReason = "auth"         // wrong credentials (535)
	RejectAuthLockout RejectReason = "auth_lockout" // too many failures from the address (454)
	RejectConnections RejectReason = "connections"  // over the connection limits (421 at connect)
	// RejectRecipients is one recipient over the recipient limit (452
	// 4.5.3): the message goes on with the recipients already accepted.
	RejectRecipients RejectReason = "recipients"
	// RejectSuppressed refuses one recipient on the suppression list (RCPT
	// 550 5.1.1); the message may still go to the others.
	RejectSuppressed RejectReason = "suppressed"
	// RejectRate defers one recipient of an Inbound server over its
	// rate limits (Admitter, 450 4.7.1).
	RejectRate RejectReason = "rate"
)

// RejectReasons returns every reason, for pre-creating label values.
func RejectReasons() []RejectReason {
	return []RejectReason{
		RejectRelay, RejectSyntax, RejectSize, RejectStorage, RejectBareNewline, RejectLineLength, RejectSigning, RejectPreflight, RejectFromDomain, RejectQuota, RejectPaused,
		RejectSequence, RejectAuth, RejectAuthLockout, RejectConnections, RejectRecipients, RejectDraining, RejectSuppressed, RejectRate,
	}
}

// RefusesMessage reports whether r refuses a message inside a mail transaction,
// i.e. whether the refusal counts as a received (and refused) message.
func (r RejectReason) RefusesMessage() bool {
	switch r {
	case RejectRelay, RejectSyntax, RejectSize, RejectStorage, RejectBareNewline, RejectLineLength, RejectSigning, RejectPreflight, RejectFromDomain, RejectQuota, RejectPaused:
		return true
	}
	return false
}
