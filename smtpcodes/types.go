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

const (
	StageDNS      Stage = "dns"
	StageConnect  Stage = "connect"
	StageGreeting Stage = "greeting"
	StageHello    Stage = "ehlo"
	StageStartTLS Stage = "starttls"
	StageAuth     Stage = "auth"
	StageMail     Stage = "mail"
	StageRcpt     Stage = "rcpt"
	StageData     Stage = "data"
)
