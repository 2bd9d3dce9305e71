package httpsubmit

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/submission"
)

// answer is one raw API answer.
// postKey posts body with an Idempotency-Key (none if key is "") and
// an optional query.
func (e *testEnv) postKey(t *testing.T, key, ctype string, body io.Reader, query ...string) answer {
	t.Helper()
	return e.send(t, strings.Join(query, ""), ctype, body, "Idempotency-Key", key)
}

const receiptJSON = `{"from":"app@example.org","to":["b@example.net"],"subject":"receipt","text":"paid"}`

func postReceipt(t *testing.T, e *testEnv, key, body string) answer {
	t.Helper()
	return e.postKey(t, key, "application/json", strings.NewReader(body))
}

// The same key twice: one message, and the second answer is the first,
// byte for byte (queue ID and generated Message-ID included), marked as
// replayed.
func TestIdempotencyKeyReplaysTheFirstAnswer(t *testing.T) {
	e := start(t, envOpts{trusted: true, idemWindow: time.Hour})
	first := postReceipt(t, e, "order-1", receiptJSON)
	second := postReceipt(t, e, "order-1", receiptJSON)
	if first.status != http.StatusAccepted || second.status != http.StatusAccepted {
		t.Fatalf("statuses %d, %d (%s), want 202 twice", first.status, second.status, second.body)
	}
	if !bytes.Equal(first.body, second.body) {
		t.Fatalf("answers differ:\n%s\n%s", first.body, second.body)
	}
	if first.header.Get("Idempotent-Replayed") != "" || second.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("Idempotent-Replayed: %q then %q", first.header.Get("Idempotent-Replayed"), second.header.Get("Idempotent-Replayed"))
	}
	if n := e.obs.accepted.Load(); n != 1 {
		t.Fatalf("%d messages queued, want 1", n)
	}
	// Without a key, or with another, the same body is a new message.
	if a := postReceipt(t, e, "", receiptJSON); a.status != http.StatusAccepted || bytes.Equal(a.body, first.body) {
		t.Fatalf("without a key: %d %s", a.status, a.body)
	}
	if a := postReceipt(t, e, "order-2", receiptJSON); a.status != http.StatusAccepted || bytes.Equal(a.body, first.body) {
		t.Fatalf("another key: %d %s", a.status, a.body)
	}
	if n := e.obs.accepted.Load(); n != 3 {
		t.Fatalf("%d messages queued, want 3", n)
	}
}

// The same key with another request is 422, naming the key; nothing is
// queued and the key still answers its first request.
func TestIdempotencyKeyWithAnotherBodyIs422(t *testing.T) {
	e := start(t, envOpts{trusted: true, idemWindow: time.Hour})
	first := postReceipt(t, e, "order-1", receiptJSON)
	other := postReceipt(t, e, "order-1", strings.Replace(receiptJSON, "paid", "refunded", 1))
	if other.status != http.StatusUnprocessableEntity || !strings.Contains(string(other.body), `\"order-1\"`) {
		t.Fatalf("another body: %d %s, want 422 naming the key", other.status, other.body)
	}
	raw := e.postKey(t, "order-1", "message/rfc822", strings.NewReader("From: app@example.org\r\nTo: b@example.net\r\n\r\npaid\r\n"))
	if raw.status != http.StatusUnprocessableEntity {
		t.Fatalf("a raw message under a JSON request's key: %d %s", raw.status, raw.body)
	}
	if again := postReceipt(t, e, "order-1", receiptJSON); !bytes.Equal(again.body, first.body) {
		t.Fatalf("after the 422 the key answers %s", again.body)
	}
	if n := e.obs.accepted.Load(); n != 1 {
		t.Fatalf("%d messages queued, want 1", n)
	}
}

// A repeat while the first request is still uploading is 409; the first
// then completes, and there is one message.
func TestIdempotencyKeyInFlightIs409(t *testing.T) {
	e := start(t, envOpts{trusted: true, idemWindow: time.Hour})
	conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(e.url, "http://"), Path))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	// Go's server sends 100 Continue when the handler first reads the
	// body, which it does only once it holds the key.
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: relay.test\r\nContent-Type: application/json\r\n"+
		"Idempotency-Key: order-1\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", Path, len(receiptJSON))
	br := bufio.NewReader(conn)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "100 Continue") {
		t.Fatalf("first request: %q %v, want 100 Continue", line, err)
	}
	if _, err := br.ReadString('\n'); err != nil { // the empty line after it
		t.Fatal(err)
	}
	if a := postReceipt(t, e, "order-1", receiptJSON); a.status != http.StatusConflict || !strings.Contains(string(a.body), "order-1") {
		t.Fatalf("concurrent repeat: %d %s, want 409", a.status, a.body)
	}
	if _, err := io.WriteString(conn, receiptJSON); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("first request: %d", resp.StatusCode)
	}
	if n := e.obs.accepted.Load(); n != 1 {
		t.Fatalf("%d messages queued, want 1", n)
	}
	// Once the first has its answer the key replays it.
	if a := postReceipt(t, e, "order-1", receiptJSON); a.status != http.StatusAccepted || a.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after the first: %d %s", a.status, a.body)
	}
}

// After the window the key is new again.
func TestIdempotencyKeyExpiresAfterTheWindow(t *testing.T) {
	c := clock.NewFake(time.Now())
	e := start(t, envOpts{trusted: true, idemWindow: time.Hour, storeClock: c})
	first := postReceipt(t, e, "order-1", receiptJSON)
	c.Advance(59 * time.Minute)
	if a := postReceipt(t, e, "order-1", receiptJSON); !bytes.Equal(a.body, first.body) {
		t.Fatalf("inside the window: %d %s", a.status, a.body)
	}
	c.Advance(time.Minute)
	later := postReceipt(t, e, "order-1", receiptJSON)
	if later.status != http.StatusAccepted || bytes.Equal(later.body, first.body) || later.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("after the window: %d %s, want a new message", later.status, later.body)
	}
	if n := e.obs.accepted.Load(); n != 2 {
		t.Fatalf("%d messages queued, want 2", n)
	}
}

// Keys are per client: two API keys may use the same key for their own
// messages. A malformed key is 400, and with keys off the header is
// ignored.
func TestIdempotencyKeyScopeAndSyntax(t *testing.T) {
	e := start(t, envOpts{idemWindow: time.Hour, insecure: true, keys: []submission.APIKey{
		{Name: "app1", KeyHash: bcryptHash(t, "app1.s1")}, {Name: "app2", KeyHash: bcryptHash(t, "app2.s2")},
	}})
	post := func(auth, key string) answer {
		req, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader(receiptJSON))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+auth)
		req.Header.Set("Idempotency-Key", key)
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{status: resp.StatusCode, header: resp.Header, body: b}
	}
	a1, a2 := post("app1.s1", "k"), post("app2.s2", "k")
	if a1.status != http.StatusAccepted || a2.status != http.StatusAccepted || bytes.Equal(a1.body, a2.body) {
		t.Fatalf("two API keys, one key: %d %s / %d %s", a1.status, a1.body, a2.status, a2.body)
	}
	for _, bad := range []string{strings.Repeat("k", 256), "caf\u00e9"} {
		if a := post("app1.s1", bad); a.status != http.StatusBadRequest {
			t.Errorf("key %.20q: %d %s, want 400", bad, a.status, a.body)
		}
	}
	off := start(t, envOpts{trusted: true})
	a, b := postReceipt(t, off, "order-1", receiptJSON), postReceipt(t, off, "order-1", receiptJSON)
	if a.status != http.StatusAccepted || bytes.Equal(a.body, b.body) {
		t.Fatalf("keys off: %s / %s, want two messages", a.body, b.body)
	}
}

// A raw message's own Idempotency-Key field works over HTTP as over
// SMTP: the repeat gets the first 202, and the field is not stored.
func TestIdempotencyKeyInARawMessage(t *testing.T) {
	e := start(t, envOpts{trusted: true, idemWindow: time.Hour})
	msg := "From: app@example.org\r\nTo: b@example.net\r\nIdempotency-Key: cron-7\r\nSubject: s\r\n\r\nhi\r\n"
	first := e.postKey(t, "", "message/rfc822", strings.NewReader(msg))
	again := e.postKey(t, "", "message/rfc822", strings.NewReader(msg))
	if first.status != http.StatusAccepted || !bytes.Equal(first.body, again.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("answers %d %s / %d %s", first.status, first.body, again.status, again.body)
	}
	if n := e.obs.accepted.Load(); n != 1 {
		t.Fatalf("%d messages queued, want 1", n)
	}
	// The engine delivers it (and the queue then drops it): what the next
	// hop got is what was stored.
	if got := e.mx.WaitMessages(t, 1, 10*time.Second)[0].Data; bytes.Contains(got, []byte("Idempotency-Key")) {
		t.Fatalf("the field was stored and sent:\n%s", got)
	}
}
