package smtpcodes

// Class is what a reply means for the recipients it applies to.
type Class int

const (
	// Success: 2xx (or 3xx where the protocol expects it); go on.
	Success Class = iota + 1
	// Transient: try again later (4xx, connection/DNS/TLS trouble).
	Transient
	// Permanent: never retry this recipient; bounce (5xx).
	Permanent
)

// String names the class for logs and metrics labels.
func (c Class) String() string {
	switch c {
	case Success:
		return "success"
	case Transient:
		return "transient"
	case Permanent:
		return "permanent"
	}
	return "unknown"
}

// Stage is the point of an SMTP transaction at which a reply or error occurred.
type Stage string

// The stages, in transaction order. Classify treats some codes differently
// by stage (552 at RCPT, 5xx at AUTH or greeting, 3xx at DATA).
const (
	StageDNS      Stage = "dns"      // looking up MX/A/AAAA for the next hop
	StageConnect  Stage = "connect"  // the TCP dial
	StageGreeting Stage = "greeting" // waiting for the server's 220
	StageHello    Stage = "ehlo"     // EHLO/HELO
	StageStartTLS Stage = "starttls" // STARTTLS and the TLS handshake
	StageAuth     Stage = "auth"     // AUTH to a smarthost
	StageMail     Stage = "mail"     // MAIL FROM
	StageRcpt     Stage = "rcpt"     // RCPT TO, per recipient
	StageData     Stage = "data"     // DATA, the body, and the final reply
)
