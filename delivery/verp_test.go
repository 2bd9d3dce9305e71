package delivery

import (
	"testing"

	"github.com/relayq/relayq/returnpath/verp"
)

// With a return path set, each recipient gets its own transaction whose
// MAIL FROM is the signed address naming the message and that recipient;
// mail from <> keeps <>.
func TestReturnPathSenderPerRecipient(t *testing.T) {
	signer, err := verp.New("bounces.example.org", []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, nil, func(o *Options) { o.ReturnPath = signer.Address })
	id := r.submit("app@example.org", "ann@example.net", "bob@example.net")
	if got := r.expectOutcomes(2); got["delivered"] != 2 {
		t.Fatalf("outcomes %v, want 2 delivered", got)
	}
	msgs := r.srv.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d transactions, want one per recipient", len(msgs))
	}
	for _, m := range msgs {
		tag, err := signer.Verify(m.From)
		if err != nil || len(m.To) != 1 {
			t.Fatalf("MAIL FROM %q to %v: %v", m.From, m.To, err)
		}
		want := map[string]int{"ann@example.net": 0, "bob@example.net": 1}[m.To[0]]
		if tag.QueueID != id || tag.Recipient != want {
			t.Errorf("sender for %s names %+v, want %s recipient %d", m.To[0], tag, id, want)
		}
	}
	env, err := r.store.Get(id)
	if err == nil && env.From != "app@example.org" {
		t.Errorf("queued sender became %q; the original must be kept", env.From)
	}

	r.submit("", "carol@example.net")
	r.expectOutcomes(1)
	if msgs = r.srv.Messages(); len(msgs) != 3 || msgs[2].From != "" {
		t.Errorf("a message from <> went out as MAIL FROM %q", msgs[len(msgs)-1].From)
	}
}
