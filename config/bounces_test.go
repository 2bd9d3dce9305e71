package config

import (
	"testing"
	"time"
)

// A wrong bounces: key stops Load naming the key, before relayq signs a
// single envelope sender with a weak key or listens for no domain.
func TestLoadRejectsBadBounces(t *testing.T) {
	const base = "submission: {listen: [\"127.0.0.1:2525\"]}\n"
	wantRejected(t, []badConfig{
		{name: "listener without a domain", file: base + "bounces: {listen: [\":25\"]}\n",
			want: `config $FILE: bounces.listen: set, but bounces.domain is empty: the listener would take mail for no address`},
		{name: "bad domain", file: base + "bounces: {domain: \"bad domain\"}\n",
			want: `config $FILE: bounces.domain: "bad domain" is not a domain name (letters, digits, '-' and '.')`},
		{name: "short secret", file: base + "bounces: {domain: b.example.org, secret_file: $DIR/key.txt}\n",
			want: `config $FILE: bounces.secret_file: `, wantPrefix: true},
		{name: "bad listen address", file: base + "bounces: {domain: b.example.org, listen: [\"nope\"]}\n",
			want: `config $FILE: bounces.listen[0]: "nope" is not host:port`, wantPrefix: true},
		{name: "negative complaint expiry", file: base + "bounces: {domain: b.example.org, complaint_expire: -1h}\n",
			want: `config $FILE: bounces.complaint_expire: -1h0m0s is negative (0 keeps complaints suppressed)`},
		{name: "feedback loop without senders", file: base + "bounces: {feedback_loops: [{}]}\n",
			want: `config $FILE: bounces.feedback_loops[0].senders: `, wantPrefix: true},
		{name: "feedback loop sender not an address", file: base + "bounces: {feedback_loops: [{senders: [yahoo.com]}]}\n",
			want: `config $FILE: bounces.feedback_loops[0].senders[0]: "yahoo.com" is not an address or @domain`},
		{name: "feedback loop unknown key", file: base + "bounces: {feedback_loops: [{sender: [a@b.example]}]}\n",
			want: `config $FILE: bounces.feedback_loops[0]: unknown key "sender" (want address, senders, forward_to)`},
		{name: "feedback loop address of another domain", file: base + "bounces: {domain: b.example.org, feedback_loops: [{address: fbl@example.org, senders: [a@b.example], forward_to: ops@example.org}]}\n",
			want: `config $FILE: bounces.feedback_loops[0].address: "fbl@example.org" is not an address of bounces.domain ("b.example.org"): the listener takes mail for that domain only`},
		{name: "feedback loop address without forward_to", file: base + "bounces: {domain: b.example.org, feedback_loops: [{address: fbl@b.example.org, senders: [a@b.example]}]}\n",
			want: `config $FILE: bounces.feedback_loops[0].forward_to: missing: with an address, reports that name no message of ours are forwarded there (an operator's mailbox)`},
		{name: "feedback loop forward_to not an address", file: base + "bounces: {domain: b.example.org, feedback_loops: [{address: fbl@b.example.org, senders: [a@b.example], forward_to: ops}]}\n",
			want: `config $FILE: bounces.feedback_loops[0].forward_to: "ops" is not an address`},
		{name: "feedback loop forward_to of the bounce domain", file: base + "bounces: {domain: b.example.org, feedback_loops: [{address: fbl@b.example.org, senders: [a@b.example], forward_to: ops@b.example.org}]}\n",
			want: `config $FILE: bounces.feedback_loops[0].forward_to: "ops@b.example.org" is of bounces.domain: forwarded there it would come back to the listener`},
		{name: "feedback loop address a VERP one", file: base + "bounces: {domain: b.example.org, feedback_loops: [{address: rq-x@b.example.org, senders: [a@b.example], forward_to: ops@example.org}]}\n",
			want: `config $FILE: bounces.feedback_loops[0].address: "rq-x@b.example.org": rq-... and postmaster are the listener's own local parts`},
		{name: "tiny message limit", file: base + "bounces: {max_message_bytes: 10}\n",
			want: `config $FILE: bounces.max_message_bytes: `, wantPrefix: true},
		{name: "negative client limit", file: base + "bounces: {limits: {per_client: -1}}\n",
			want: `config $FILE: bounces.limits.per_client: -1 must be from 0 (no limit) to 10000000`},
		{name: "huge address limit", file: base + "bounces: {limits: {per_address: 100000000}}\n",
			want: `config $FILE: bounces.limits.per_address: 100000000 must be from 0 (no limit) to 10000000`},
		{name: "no window", file: base + "bounces: {limits: {window: 0s}}\n",
			want: `config $FILE: bounces.limits.window: 0s must be at least 1s while bounces.limits.per_client or per_address is set`},
		{name: "negative duplicate window", file: base + "bounces: {limits: {duplicate_window: -1h}}\n",
			want: `config $FILE: bounces.limits.duplicate_window: -1h0m0s is negative (0 remembers no report)`},
		{name: "misspelt limit key", file: base + "bounces: {limits: {per_ip: 10}}\n",
			want: `config $FILE: unknown key "bounces.limits.per_ip"`, wantPrefix: true},
	})
}

// The listener's limits load from the file, and 0 turns each off.
func TestLoadBounceLimits(t *testing.T) {
	cfg, _, err := loadWith(t, "submission: {listen: [\"127.0.0.1:2525\"]}\nbounces: {limits: {per_client: 0, per_address: 5, window: 10m, duplicate_window: 0}}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := BounceLimits{PerClient: 0, PerAddress: 5, Window: 10 * time.Minute}
	if cfg.Bounces.Limits != want {
		t.Errorf("limits %+v, want %+v", cfg.Bounces.Limits, want)
	}
	if d := Default().Bounces.Limits; d.PerClient != 1000 || d.PerAddress != 20 || d.Window != time.Hour || d.DuplicateWindow != 24*time.Hour {
		t.Errorf("default limits %+v", d)
	}
}
