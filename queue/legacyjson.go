package queue

import (
	"encoding/json"

	"github.com/relayq/relayq/internal/identity"
)

// legacySender is the sender as JSON records written before it was one
// value held it: flat, in auth_user and stream. Records of versions 1 and
// 2 and history records older than the binary form may be of that kind.
type legacySender struct {
	AuthUser string `json:"auth_user,omitempty"`
	Stream   string `json:"stream,omitempty"`
}

func (l legacySender) sender() identity.Sender {
	return identity.Sender{Stream: l.Stream, Credential: identity.Credential{Name: l.AuthUser}}
}

// unmarshalEnvelope reads env from its JSON form, old or new.
func unmarshalEnvelope(js []byte, env *Envelope) error {
	j := struct {
		*Envelope
		legacySender
	}{Envelope: env}
	if err := json.Unmarshal(js, &j); err != nil {
		return err
	}
	if env.Sender == (identity.Sender{}) {
		env.Sender = j.sender()
	}
	return nil
}
