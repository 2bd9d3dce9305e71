package config

import "testing"

// idempotency_window and max_hold: 0 turns each off, negative or (for
// max_hold) beyond what FUTURERELEASE can advertise is refused by name.
func TestHoldsRejected(t *testing.T) {
	wantRejected(t, []badConfig{
		{
			name: "negative idempotency window",
			file: "submission:\n  idempotency_window: -1h\n",
			want: `config $FILE: submission.idempotency_window: -1h0m0s must not be negative (0 turns idempotency keys off)`,
		},
		{
			name: "negative max hold",
			file: "submission:\n  max_hold: -1s\n",
			want: `config $FILE: submission.max_hold: -1s must not be negative (0 accepts no hold)`,
		},
		{
			name: "max hold past RFC 4865's nine digits",
			file: "submission:\n  max_hold: 300000h\n",
			want: `config $FILE: submission.max_hold: 300000h0m0s is more than FUTURERELEASE can advertise (999999999s, RFC 4865 section 3)`,
		},
		{
			name: "max hold in fractions of a second",
			file: "submission:\n  max_hold: 1500ms\n",
			want: `config $FILE: submission.max_hold: 1.5s must be whole seconds (RFC 4865 counts in seconds)`,
		},
	})
}
