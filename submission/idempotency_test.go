package submission

import (
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
)

const keyedMessage = "From: app@example.org\r\nTo: b@example.net\r\nIdempotency-Key: receipt-42\r\n" +
	" continued\r\nSubject: receipt\r\n\r\nhi\r\n"

// sendKeyedTwice sends keyedMessage in two sessions and returns the queue
// IDs the two 250 replies name.
func sendKeyedTwice(t *testing.T, env *testEnv) []string {
	t.Helper()
	var ids []string
	for range 2 {
		reply, err := send(dial(t, env.addr), "app@example.org", []string{"b@example.net"}, keyedMessage)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, queueIDFrom(t, reply))
	}
	return ids
}

// The same Idempotency-Key in two sessions queues one message, and both
// 250s name it; the key is gone from what the queue holds (and signs).
func TestIdempotencyKeyHeaderQueuesOnce(t *testing.T) {
	mod, recs := withSigner(t)
	env := startServer(t, func(o *Options) { mod(o); o.IdempotencyWindow = time.Hour })
	ids := sendKeyedTwice(t, env)
	if ids[0] != ids[1] {
		t.Fatalf("queue IDs %v, want the first one twice", ids)
	}
	env.wantQueued(t, 1, "")
	stored := readBody(t, env.store, ids[0])
	if strings.Contains(stored, "Idempotency-Key") || strings.Contains(stored, "continued") {
		t.Fatalf("the key reached the stored message:\n%s", stored)
	}
	if !strings.Contains(stored, "To: b@example.net\r\nSubject: receipt\r\n\r\nhi\r\n") {
		t.Fatalf("other fields were touched:\n%s", stored)
	}
	dkimtest.Verify(t, []byte(stored), recs)
}

// Keys belong to who gave them: a trusted address's key is not a user's.
// A folded field is one key, unfolded (RFC 5322 section 2.2.3).
func TestIdempotencyKeyIsPerClient(t *testing.T) {
	env := startServer(t, func(o *Options) { o.IdempotencyWindow = time.Hour })
	replyIP, err := send(dial(t, env.addr), "app@example.org", []string{"b@example.net"}, keyedMessage)
	if err != nil {
		t.Fatal(err)
	}
	acc := env.srv.Acceptor()
	_, found, err := acc.Replay("ip:127.0.0.1", "receipt-42 continued")
	if err != nil || !found {
		t.Fatalf("the key is not kept for 127.0.0.1: %v", err)
	}
	if _, found, _ := acc.Replay("user:app", "receipt-42 continued"); found {
		t.Fatalf("the key of 127.0.0.1 (%s) is found for user app", replyIP)
	}
}

// With the window 0 keys are off: the field is an ordinary one.
func TestIdempotencyKeyOffPassesTheFieldThrough(t *testing.T) {
	env := startServer(t, nil)
	ids := sendKeyedTwice(t, env)
	if ids[0] == ids[1] || countMessages(t, env.store) != 2 {
		t.Fatalf("keys off: %v, want two messages", ids)
	}
	if stored := readBody(t, env.store, ids[0]); !strings.Contains(stored, "Idempotency-Key: receipt-42\r\n continued\r\n") {
		t.Fatalf("the field was touched:\n%s", stored)
	}
}

// A field that is not a key is refused: the client asked for a guarantee.
func TestIdempotencyKeyMalformedIsRefused(t *testing.T) {
	env := startServer(t, func(o *Options) { o.IdempotencyWindow = time.Hour })
	long := strings.Repeat("k", MaxIdempotencyKey+1)
	for _, v := range []string{"", long, "caf\xc3\xa9"} {
		_, err := send(dial(t, env.addr), "app@example.org", []string{"b@example.net"}, "Idempotency-Key: "+v+"\r\n\r\nhi\r\n")
		if smtpCode(err) != 554 || enhanced(err) != "5.6.0" {
			t.Errorf("key %.20q: %v, want 554 5.6.0", v, err)
		}
	}
	env.wantQueued(t, 0, "")
}

func TestParseIdempotencyKey(t *testing.T) {
	for _, c := range []struct {
		in, key string
		ok      bool
	}{
		{"abc", "abc", true},
		{` "8e03978e-40d5-43e8-bc93-6894a57f9324" `, "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{"with space", "with space", true},
		{strings.Repeat("x", 255), strings.Repeat("x", 255), true},
		{strings.Repeat("x", 256), "", false},
		{"", "", false},
		{`""`, "", false},
		{"tab\tinside", "", false},
		{"\x7f", "", false},
		{"é", "", false},
	} {
		key, ok := ParseIdempotencyKey(c.in)
		if key != c.key || ok != c.ok {
			t.Errorf("ParseIdempotencyKey(%q) = %q, %v; want %q, %v", c.in, key, ok, c.key, c.ok)
		}
	}
}

func FuzzParseIdempotencyKey(f *testing.F) {
	f.Add(`"abc"`)
	f.Add(" x ")
	f.Fuzz(func(t *testing.T, v string) {
		key, ok := ParseIdempotencyKey(v)
		if !ok {
			return
		}
		if len(key) == 0 || len(key) > MaxIdempotencyKey || !strings.Contains(v, key) {
			t.Fatalf("%q gave key %q", v, key)
		}
		for _, c := range []byte(key) {
			if c < 0x20 || c > 0x7e {
				t.Fatalf("%q gave key %q with byte %#x", v, key, c)
			}
		}
	})
}

// withoutFields drops exactly the named field, continuation lines included.
func FuzzWithoutField(f *testing.F) {
	f.Add([]byte("A: 1\r\nIdempotency-Key: x\r\n y\r\nB: 2\r\n"))
	key := func(f headerField) bool { return f == idempotencyKeyField }
	f.Fuzz(func(t *testing.T, sec []byte) {
		out := withoutFields(sec, key)
		if len(out) > len(sec) {
			t.Fatalf("grew: %q -> %q", sec, out)
		}
		if again := withoutFields(out, key); string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q -> %q", sec, out, again)
		}
	})
}
