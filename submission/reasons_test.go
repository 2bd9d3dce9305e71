package submission

import "testing"

// TestRejectReasons: which refusals are a verdict on a message (and so
// count as received mail) is decided here, by reason, not by the order of
// a list elsewhere.
func TestRejectReasons(t *testing.T) {
	for _, tc := range []struct {
		r       RejectReason
		message bool
	}{
		{RejectRelay, true},
		{RejectSyntax, true},
		{RejectSize, true},
		{RejectStorage, true},
		{RejectBareNewline, true},
		{RejectLineLength, true},
		{RejectSigning, true},
		{RejectPreflight, true},
		{RejectFromDomain, true},
		{RejectQuota, true},
		{RejectPaused, true},
		{RejectSequence, false},
		{RejectAuth, false},
		{RejectAuthLockout, false},
		{RejectConnections, false},
		{RejectRecipients, false},
		{RejectSuppressed, false},
		{RejectRate, false},
		{RejectReason("made-up"), false},
	} {
		if got := tc.r.RefusesMessage(); got != tc.message {
			t.Errorf("%s.RefusesMessage() = %v, want %v", tc.r, got, tc.message)
		}
	}
	seen := map[RejectReason]bool{}
	for _, r := range RejectReasons() {
		if seen[r] || r == "" {
			t.Errorf("reason %q listed twice or empty", r)
		}
		seen[r] = true
	}
	if len(seen) != 19 {
		t.Errorf("RejectReasons lists %d reasons, want all 19 constants", len(seen))
	}
}
