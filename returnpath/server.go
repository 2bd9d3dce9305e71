package returnpath

import (
	"strings"

	"github.com/relayq/relayq/submission"
)

// NewServer is the bounce domain's listener: submission's server with its
// limits and timeouts (o), taking mail for r alone. Whatever o says of
// relaying, signing and suppression is dropped: the listener relays
// nothing and stores no mail.
func NewServer(o submission.Options, r *Recorder) (*submission.Server, error) {
	o.Inbound = r
	o.Policy = submission.Policy{}
	o.Signer, o.Suppressions = nil, nil
	o.BeforeCommit, o.OnQueued = nil, nil
	o.AllowInsecureAuth = false
	o.AddMissingHeaders = false
	return submission.New(o)
}

func equalFold(a, b string) bool { return a != "" && strings.EqualFold(a, b) }
