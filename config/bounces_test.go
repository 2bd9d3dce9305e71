package config

import "testing"

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
			want: `config $FILE: bounces.feedback_loops[0]: unknown key "sender" (want address, senders)`},
		{name: "feedback loop address of another domain", file: base + "bounces: {domain: b.example.org, feedback_loops: [{address: fbl@example.org, senders: [a@b.example]}]}\n",
			want: `config $FILE: bounces.feedback_loops[0].address: "fbl@example.org" is not an address of bounces.domain ("b.example.org"): the listener takes mail for that domain only`},
		{name: "feedback loop address a VERP one", file: base + "bounces: {domain: b.example.org, feedback_loops: [{address: rq-x@b.example.org, senders: [a@b.example]}]}\n",
			want: `config $FILE: bounces.feedback_loops[0].address: "rq-x@b.example.org": rq-... and postmaster are the listener's own local parts`},
		{name: "tiny message limit", file: base + "bounces: {max_message_bytes: 10}\n",
			want: `config $FILE: bounces.max_message_bytes: `, wantPrefix: true},
	})
}
