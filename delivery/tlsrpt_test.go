package delivery

import (
	"testing"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/queue"
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
	counts, err := r.store.TLS().Day("example.net", r.clk.Now())
	if err != nil || len(counts) != 1 || counts[0].N != 1 || counts[0].Policy != "tlsa" {
		t.Errorf("TLS-RPT counts %+v, %v; want one tlsa session", counts, err)
	}
}

// TLS-RPT counts DANE and MTA-STS sessions, and opportunistic STARTTLS
// only where it failed (the session fell back to plaintext, or the next
// ones will): a plain session without a policy is nothing to report.
func TestTLSResultPolicies(t *testing.T) {
	o := queue.Outcome{Address: "bob@example.net", RemoteMTA: "mx.example.net"}
	for _, tc := range []struct {
		name string
		info smtpclient.TLSInfo
		want string // policy type, "" when not counted
	}{
		{"dane", smtpclient.TLSInfo{Policy: smtpclient.PolicyDANE, Version: "TLSv1.3"}, "tlsa"},
		{"mta-sts failure", smtpclient.TLSInfo{Policy: smtpclient.PolicyMTASTS, Failure: smtpclient.FailCertExpired}, "sts"},
		{"opportunistic", smtpclient.TLSInfo{Policy: smtpclient.PolicyOpportunistic, Version: "TLSv1.3"}, ""},
		{"plain", smtpclient.TLSInfo{Policy: smtpclient.PolicyNone}, ""},
		{"STARTTLS refused, fell back", smtpclient.TLSInfo{Policy: smtpclient.PolicyNone, Failure: smtpclient.FailStartTLSNotSupported, Fallback: true}, "no-policy-found"},
		{"handshake failed", smtpclient.TLSInfo{Policy: smtpclient.PolicyNone, Failure: smtpclient.FailValidation}, "no-policy-found"},
		{"in plaintext after a failed handshake", smtpclient.TLSInfo{Policy: smtpclient.PolicyNone, Fallback: true}, ""},
	} {
		r, ok := tlsResult(tc.info, o)
		if got := map[bool]string{true: r.Policy}[ok]; got != tc.want {
			t.Errorf("%s: counted as %q, want %q", tc.name, got, tc.want)
		}
		if ok && (r.MX != o.RemoteMTA || r.Failure != string(tc.info.Failure)) {
			t.Errorf("%s: result %+v", tc.name, r)
		}
	}
}
