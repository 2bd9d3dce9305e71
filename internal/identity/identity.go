package identity

import "fmt"

// Kind is the kind of credential a client presented.
type Kind uint8

const (
	// Unknown is no credential (a client on a trusted network), or, with
	// a Name, a credential stored before kinds were recorded.
	Unknown Kind = iota
	// User is an SMTP user (submission.users), given by SMTP AUTH or HTTP
	// basic authentication.
	User
	// APIKey is an API key (submission.api_keys), given as a bearer token
	// or as a hosted-API token that stands for it.
	APIKey
)

// String is the kind's name in events, logs and the APIs: "user", "key"
// or "".
func (k Kind) String() string {
	switch k {
	case User:
		return "user"
	case APIKey:
		return "key"
	}
	return ""
}

// MarshalText writes the kind as String does.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads what MarshalText writes; anything else is an error.
func (k *Kind) UnmarshalText(b []byte) error {
	for _, c := range [...]Kind{Unknown, User, APIKey} {
		if c.String() == string(b) {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("identity: unknown credential kind %q", b)
}

// Credential is what a client authenticated as.
type Credential struct {
	Kind Kind `json:"kind,omitempty"`
	// Name is the user name or the API key's configured name (never the
	// secret); "" for none.
	Name string `json:"name,omitempty"`
}

// Authenticated reports whether the client presented a credential.
func (c Credential) Authenticated() bool { return c.Name != "" }

// String is kind:name ("user:billing", "key:shop"), the name alone for a
// credential of unknown kind, "" for none.
func (c Credential) String() string {
	if k := c.Kind.String(); k != "" && c.Name != "" {
		return k + ":" + c.Name
	}
	return c.Name
}

// Sender is who submitted a message (not its MAIL FROM), as resolved at
// acceptance.
type Sender struct {
	// Tenant is the tenant the credential belongs to; "" is the default
	// tenant.
	Tenant string `json:"tenant,omitempty"`
	// Stream is the configured stream the message belongs to; "" is the
	// default stream (or no streams configured).
	Stream string `json:"stream,omitempty"`
	// Credential is what the client authenticated as.
	Credential Credential `json:"credential,omitzero"`
}
