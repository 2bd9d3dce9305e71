package delivery

import (
	"testing"

	"github.com/relayq/relayq/delivery/smtpclient"
)

// tlsToStore, as Options.TLSReport of a rig, stands for the rig's own
// store (opened in rig.start), as relayq configures it.
var tlsToStore TLSRecorder = &tlsResults{}

// With the store as its TLS-RPT recorder, an attempt writes its outcome
// and its TLS count in one commit: a first attempt (claimed when the
// message was queued) costs the queue two commits in all, the message's
// and the outcome's.
func TestTLSCountGoesWithTheOutcome(t *testing.T) {
	r := newRig(t, nil, func(o *Options) {
		o.Courier = tlsCourier{next: o.Courier, info: smtpclient.TLSInfo{Policy: smtpclient.PolicyDANE, Version: "TLSv1.3"}}
		o.TLSReport = tlsToStore
	})
	before := r.store.Stats().Commits
	r.submit("app@example.org", "bob@example.net")
	r.expectOutcomes(1)
	if n := r.store.Stats().Commits - before; n != 2 {
		t.Errorf("queueing and one attempt took %d commits, want 2 (message, outcome with its TLS count)", n)
	}
	counts, err := r.store.TLSDay("example.net", r.clk.Now())
	if err != nil || len(counts) != 1 || counts[0].N != 1 || counts[0].Policy != "tlsa" {
		t.Errorf("TLS-RPT counts %+v, %v; want one tlsa session", counts, err)
	}
}
