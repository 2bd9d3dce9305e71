package httpsubmit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/esp/postmark"
	"github.com/relayq/relayq/internal/esp/resend"
	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

const espKey = "app.esp-s3cret-0123"

func startESP(t *testing.T, o envOpts) *testEnv {
	t.Helper()
	o.insecure = true
	o.keys = append(o.keys, submission.APIKey{Name: "app", KeyHash: bcryptHash(t, espKey)})
	e := start(t, o)
	e.url = strings.TrimSuffix(e.url, Path)
	return e
}

// espPost posts body to path with headers as name, value pairs.
func (e *testEnv) espPost(t *testing.T, path string, body []byte, headers ...string) answer {
	t.Helper()
	saved := e.url
	e.url += path
	defer func() { e.url = saved }()
	return e.send(t, "", "application/json", bytes.NewReader(body), headers...)
}

func postmarkAuth() []string { return []string{"X-Postmark-Server-Token", espKey} }
func resendAuth() []string   { return []string{"Authorization", "Bearer " + espKey} }

// A Postmark /email request is queued through the Acceptor and answered
// in Postmark's shape: ErrorCode 0 and the queue ID as MessageID, only
// once the message is stored; the stream, tag and metadata go with it.
func TestPostmarkEmailQueued(t *testing.T) {
	e := startESP(t, envOpts{})
	a := e.espPost(t, PostmarkPath, []byte(`{"From":"app@example.org","To":"a@example.net","Subject":"Hi","TextBody":"Hello",
		"Tag":"welcome","Metadata":{"user":"42"},"MessageStream":"outbound","Headers":[{"Name":"X-Custom","Value":"1"}]}`), postmarkAuth()...)
	var r postmark.Result
	if err := json.Unmarshal(a.body, &r); err != nil || a.status != http.StatusOK || r.ErrorCode != 0 || r.MessageID == "" {
		t.Fatalf("status %d, body %s", a.status, a.body)
	}
	if _, err := e.store.Get(r.MessageID); err != nil {
		t.Fatalf("MessageID %q is not a queued message: %v", r.MessageID, err)
	}
	got := string(e.mx.WaitMessages(t, 1, 10*time.Second)[0].Data)
	for _, want := range []string{"\r\nX-Relayq-Tag: welcome\r\n", "\r\nX-Relayq-Metadata: user=42\r\n", "\r\nX-Custom: 1\r\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("delivered message lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "X-Relayq-Stream") {
		t.Errorf("the stream field was delivered:\n%s", got)
	}
}

// Every malformed or unsupported request is refused in the provider's own
// error shape naming the field, and nothing is queued.
func TestESPRefusalsQueueNothing(t *testing.T) {
	e := startESP(t, envOpts{maxBytes: 4 << 10})
	big := strings.Repeat("x", 20<<10)
	pm := func(extra string) []byte {
		return []byte(`{"From":"app@example.org","To":"a@example.net","TextBody":"x"` + extra + `}`)
	}
	sg := func(extra string) []byte {
		return []byte(`{"personalizations":[{"to":[{"email":"a@example.net"}]}],"from":{"email":"app@example.org"},"subject":"s","content":[{"type":"text/plain","value":"x"}]` + extra + `}`)
	}
	rs := func(extra string) []byte {
		return []byte(`{"from":"app@example.org","to":"a@example.net","subject":"s","text":"x"` + extra + `}`)
	}
	for _, c := range []struct {
		name, path string
		body       []byte
		auth       []string
		status     int
		want       string // in the body
	}{
		{"postmark over the limit", PostmarkPath, pm(`,"HtmlBody":"` + big + `"`), postmarkAuth(), 413, `"ErrorCode":300`},
		{"postmark duplicate key", PostmarkPath, pm(`,"from":"b@example.org"`), postmarkAuth(), 422, `"ErrorCode":402`},
		{"postmark wrong type", PostmarkPath, pm(`,"Subject":5`), postmarkAuth(), 422, `"ErrorCode":403`},
		{"postmark unknown field", PostmarkPath, pm(`,"Sender":"x"`), postmarkAuth(), 422, `Sender`},
		{"postmark tracking", PostmarkPath, pm(`,"TrackOpens":true`), postmarkAuth(), 422, `TrackOpens: not supported`},
		{"postmark no token", PostmarkPath, pm(``), nil, 401, `"ErrorCode":10`},
		{"postmark bad token", PostmarkPath, pm(``), []string{"X-Postmark-Server-Token", "nope"}, 401, `"ErrorCode":10`},
		{"resend over the limit", ResendPath, rs(`,"html":"` + big + `"`), resendAuth(), 413, `"name":"validation_error"`},
		{"resend duplicate key", ResendPath, rs(`,"TO":"b@example.net"`), resendAuth(), 400, `"name":"validation_error"`},
		{"resend wrong type", ResendPath, rs(`,"headers":[]`), resendAuth(), 422, `headers`},
		{"resend unknown field", ResendPath, rs(`,"track_opens":true`), resendAuth(), 422, `track_opens`},
		{"resend template", ResendPath, rs(`,"template":{"id":"x"}`), resendAuth(), 422, `template: not supported`},
		{"resend no key", ResendPath, rs(``), nil, 401, `"name":"missing_api_key"`},
		{"resend bad key", ResendPath, rs(``), []string{"Authorization", "Bearer nope"}, 403, `"name":"invalid_api_key"`},
		{"sendgrid over the limit", SendGridPath, sg(`,"headers":{"X-Big":"` + big + `"}`), resendAuth(), 413, `"errors":[`},
		{"sendgrid duplicate key", SendGridPath, sg(`,"Subject":"t"`), resendAuth(), 400, `"field":"Subject"`},
		{"sendgrid wrong type", SendGridPath, sg(`,"send_at":"soon"`), resendAuth(), 400, `"field":"send_at"`},
		{"sendgrid unknown field", SendGridPath, sg(`,"track":true`), resendAuth(), 400, `"field":"track"`},
		{"sendgrid template", SendGridPath, sg(`,"template_id":"d-1"`), resendAuth(), 400, `"field":"template_id"`},
		{"sendgrid no key", SendGridPath, sg(``), nil, 401, `"message":"The provided authorization grant`},
		{"sendgrid bad key", SendGridPath, sg(``), []string{"Authorization", "Bearer nope"}, 401, `"field":null`},
	} {
		a := e.espPost(t, c.path, c.body, c.auth...)
		if a.status != c.status || !strings.Contains(string(a.body), c.want) {
			t.Errorf("%s: %d %s, want %d with %s", c.name, a.status, a.body, c.status, c.want)
		}
	}
	if n := e.obs.accepted.Load(); n != 0 {
		t.Errorf("%d messages queued by refused requests", n)
	}
}

// A Resend batch sent twice under one Idempotency-Key is queued once: the
// repeat gets the same IDs, and a different body under the key is 422.
func TestResendBatchIdempotent(t *testing.T) {
	e := startESP(t, envOpts{idemWindow: time.Hour})
	var items []string
	for i := 0; i < 3; i++ {
		items = append(items, fmt.Sprintf(`{"from":"app@example.org","to":"a%d@example.net","subject":"s","text":"x"}`, i))
	}
	body := []byte("[" + strings.Join(items, ",") + "]")
	h := append(resendAuth(), "Idempotency-Key", "batch-1")
	first := e.espPost(t, ResendBatchPath, body, h...)
	again := e.espPost(t, ResendBatchPath, body, h...)
	var b1, b2 resend.BatchSent
	if json.Unmarshal(first.body, &b1) != nil || json.Unmarshal(again.body, &b2) != nil || len(b1.Data) != 3 {
		t.Fatalf("%d %s / %d %s", first.status, first.body, again.status, again.body)
	}
	for i := range b1.Data {
		if b1.Data[i] != b2.Data[i] {
			t.Errorf("item %d: %v then %v", i, b1.Data[i], b2.Data[i])
		}
	}
	if n := e.obs.accepted.Load(); n != 3 {
		t.Errorf("%d queued, want 3", n)
	}
	other := e.espPost(t, ResendBatchPath, []byte("["+items[0]+"]"), h...)
	if other.status != http.StatusUnprocessableEntity || !strings.Contains(string(other.body), "invalid_idempotent_request") {
		t.Errorf("a different body under the key: %d %s", other.status, other.body)
	}
	single := []byte(items[0])
	h2 := append(resendAuth(), "Idempotency-Key", "one-1")
	s1, s2 := e.espPost(t, ResendPath, single, h2...), e.espPost(t, ResendPath, single, h2...)
	if s1.status != 200 || !bytes.Equal(s1.body, s2.body) || s2.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("single repeat: %d %s / %d %s", s1.status, s1.body, s2.status, s2.body)
	}
	if n := e.obs.accepted.Load(); n != 4 {
		t.Errorf("%d queued, want 4", n)
	}
}

// varying are the fields two submissions of one message differ in.
var varying = regexp.MustCompile(`(?m)^(Message-Id|Date): .*\r\n`)

// The same message through relayq's own API and through Resend's and
// Postmark's is the same bytes, but for its Message-ID and Date.
func TestESPSameBytesAsOwnAPI(t *testing.T) {
	e := startESP(t, envOpts{})
	own := postJSON(t, &testEnv{url: e.url + Path, client: e.client}, "Bearer "+espKey, map[string]any{
		"from": "App <app@example.org>", "to": []string{"a@example.net"}, "subject": "Grüße", "text": "Hello", "html": "<p>Hello</p>",
		"attachments": []map[string]any{{"filename": "a.txt", "content_type": "text/plain", "content": []byte("hi")}}})
	if own.status != http.StatusAccepted {
		t.Fatalf("own API: %+v", own)
	}
	r := e.espPost(t, ResendPath, []byte(`{"from":"App <app@example.org>","to":"a@example.net","subject":"Grüße","text":"Hello","html":"<p>Hello</p>",
		"attachments":[{"filename":"a.txt","content_type":"text/plain","content":"aGk="}]}`), resendAuth()...)
	p := e.espPost(t, PostmarkPath, []byte(`{"From":"App <app@example.org>","To":"a@example.net","Subject":"Grüße","TextBody":"Hello","HtmlBody":"<p>Hello</p>",
		"Attachments":[{"Name":"a.txt","ContentType":"text/plain","Content":"aGk="}]}`), postmarkAuth()...)
	if r.status != 200 || p.status != 200 {
		t.Fatalf("resend %d %s, postmark %d %s", r.status, r.body, p.status, p.body)
	}
	msgs := e.mx.WaitMessages(t, 3, 10*time.Second)
	norm := func(b []byte) string {
		s := string(withoutReceived(t, b))
		s = varying.ReplaceAllString(s, "")
		// multipart boundaries are random
		return regexp.MustCompile(`[0-9a-f]{60}`).ReplaceAllString(s, "BOUNDARY")
	}
	want := norm(msgs[0].Data)
	for _, m := range msgs[1:] {
		if got := norm(m.Data); got != want {
			t.Errorf("delivered bytes differ:\n%s\nwant\n%s", got, want)
		}
	}
}

// relayq's own JSON API takes tags and metadata too, kept with the
// message as the hosted APIs' are, and refuses them over the limits
// naming the field, queueing nothing.
func TestOwnAPITagsAndMetadata(t *testing.T) {
	e := startESP(t, envOpts{})
	own := &testEnv{url: e.url + Path, client: e.client}
	r := postJSON(t, own, "Bearer "+espKey, map[string]any{"from": "app@example.org", "to": []string{"a@example.net"},
		"subject": "s", "text": "x", "tags": []string{"welcome"}, "metadata": map[string]string{"user": "42"}})
	if r.status != http.StatusAccepted {
		t.Fatalf("%+v", r)
	}
	got := string(e.mx.WaitMessages(t, 1, 10*time.Second)[0].Data)
	if !strings.Contains(got, "\r\nX-Relayq-Tag: welcome\r\n") || !strings.Contains(got, "\r\nX-Relayq-Metadata: user=42\r\n") {
		t.Errorf("tags or metadata not kept:\n%s", got)
	}
	tags := make([]string, 11)
	for i := range tags {
		tags[i] = fmt.Sprint("t", i)
	}
	r = postJSON(t, own, "Bearer "+espKey, map[string]any{"from": "app@example.org", "to": []string{"a@example.net"}, "text": "x", "tags": tags})
	if r.status != http.StatusBadRequest || !strings.Contains(r.err.Error, "tags") {
		t.Errorf("11 tags: %+v", r)
	}
	if n := e.obs.accepted.Load(); n != 1 {
		t.Errorf("%d queued, want 1", n)
	}
}

// A Postmark batch is answered item by item: an item that does not
// translate and an item whose only recipient is suppressed each get their
// own ErrorCode (300, 406: Postmark's "inactive recipient") in place, and
// the others are queued.
func TestPostmarkBatchItemByItem(t *testing.T) {
	l := &suppression.List{}
	e := startESP(t, envOpts{suppressions: l})
	l.Store = e.store.Suppressions()
	if err := e.store.Suppressions().Add(queue.Suppression{Address: "gone@example.net", Reply: "550 5.1.1 no such user"}); err != nil {
		t.Fatal(err)
	}
	a := e.espPost(t, PostmarkBatchPath, []byte(`[
		{"From":"app@example.org","To":"a@example.net","TextBody":"x"},
		{"From":"app@example.org","TextBody":"x"},
		{"From":"app@example.org","To":"gone@example.net","TextBody":"x"},
		{"From":"app@example.org","To":"b@example.net","TextBody":"x"}]`), postmarkAuth()...)
	var rs []postmark.Result
	if a.status != http.StatusOK || json.Unmarshal(a.body, &rs) != nil || len(rs) != 4 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	for i, want := range []int{0, postmark.CodeInvalidRequest, postmark.CodeInactive, 0} {
		if rs[i].ErrorCode != want || (want == 0) != (rs[i].MessageID != "") {
			t.Errorf("item %d: %+v, want ErrorCode %d", i, rs[i], want)
		}
	}
	if n := e.obs.accepted.Load(); n != 2 {
		t.Errorf("%d queued, want 2", n)
	}
}
