package queue

import (
	"strings"

	"github.com/relayq/relayq/internal/identity"
)

// The binary forms (appendFields, appendFinished) keep the sender's stream
// in a slot of its own and its tenant and credential in the string that
// held only the authenticated name before kinds and tenants existed:
//
//	the bare name, when the kind is unknown and the tenant the default
//	(every record written before), or
//	NUL | kind (1 byte) | tenant | NUL | name
//
// No name starts with NUL (SASL separates its fields with it, and
// configured names are printable), so the two never meet, and a record
// without a credential or tenant is byte for byte what it was.

// senderSlot is the slot's string for s.
func senderSlot(s identity.Sender) string {
	c := s.Credential
	if c.Kind == identity.Unknown && s.Tenant == "" {
		return c.Name
	}
	return "\x00" + string(rune(c.Kind)) + s.Tenant + "\x00" + c.Name
}

// readSenderSlot fills s's tenant and credential from the slot's string v.
func readSenderSlot(s *identity.Sender, v string) {
	if len(v) < 2 || v[0] != 0 || v[1] >= 0x80 {
		s.Tenant, s.Credential = "", identity.Credential{Name: v}
		return
	}
	tenant, name, _ := strings.Cut(v[2:], "\x00")
	s.Tenant, s.Credential = tenant, identity.Credential{Kind: identity.Kind(v[1]), Name: name}
}
