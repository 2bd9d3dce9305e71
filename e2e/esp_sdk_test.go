package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/relayq/relayq/smtptest"
)

// espSDKDir holds the pinned SDKs' package.json, lock file and sdk.js.
const espSDKDir = "testdata/esp-sdk"

// espSDKs installs the pinned SDKs (npm ci) into a cache directory keyed
// by the lock file's hash and returns it. Without node or npm, or when the
// registry cannot be reached, the test is skipped locally and fails in CI
// (.ci/run installs Debian's npm).
func espSDKs(t *testing.T) string {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") != "" {
			t.Fatalf("%s, but CI is set: .ci/run installs Debian's npm and CI reaches the npm registry", msg)
		}
		t.Skipf("%s: install Debian's npm (see .ci/run) to drive the providers' own SDKs (set CI to make this a failure)", msg)
	}
	for _, p := range []string{"node", "npm"} {
		if _, err := exec.LookPath(p); err != nil {
			skip("no %s on PATH", p)
		}
	}
	lock, err := os.ReadFile(filepath.Join(espSDKDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "relayq-esp-sdk", hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "npm-")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(espSDKDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		skip("npm ci of the pinned SDKs failed (%v): %s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !os.IsExist(err) {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(dir); serr != nil { // another run put it there first
			t.Fatal(err)
		}
	}
	return dir
}

// sdkCase is one line sdk.js printed.
type sdkCase struct {
	Case  string          `json:"case"`
	OK    bool            `json:"ok"`
	Data  json.RawMessage `json:"data"`
	Error json.RawMessage `json:"error"`
}

// runSDK runs sdk.js for provider against the relay's HTTP listener.
func runSDK(t *testing.T, modules, provider, relayAddr, key, tok string) map[string]sdkCase {
	t.Helper()
	script, err := filepath.Abs(filepath.Join(espSDKDir, "sdk.js"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, provider)
	cmd.Env = append(cleanEnv(), "NODE_PATH="+filepath.Join(modules, "node_modules"),
		"RELAY="+relayAddr, "KEY="+key, "TOK="+tok, "ATTACH="+base64.StdEncoding.EncodeToString([]byte(espAttachment)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node sdk.js %s: %v\n%s\n%s", provider, err, out, stderr.Bytes())
	}
	cases := map[string]sdkCase{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var c sdkCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("sdk.js printed %q: %v", sc.Bytes(), err)
		}
		cases[c.Case] = c
	}
	return cases
}

const espAttachment = "quarterly figures\n"

// espRelay starts a relay with HTTP submission, the admin API and one API
// key; it returns the relay, the key and the HTTP listener's host:port.
// The SDKs send a batch as parallel requests, and every key check holds a
// guess of the AUTH limit while it runs (a remembered key too): at the
// default of 5 a busy machine would lock the key out mid-batch, so the
// limit is raised here.
func espRelay(t *testing.T, mx *smtptest.Server) (*relay, string, string) {
	t.Helper()
	const key = "app.sdk-s3cret-key"
	hash, err := bcrypt.GenerateFromPassword([]byte(key), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	r := newRelay(t, mx.Addr(), heldRetries, "")
	r.httpURL = r.withHTTP(t)
	r.admin, r.adminURL = r.withAdmin(t)
	rewriteConfig(t, r, map[string]string{"submission:\n": fmt.Sprintf(
		"submission:\n  allow_insecure_auth: true\n  idempotency_window: 24h\n  auth_max_failures: 1000\n"+
			"  api_keys:\n    - name: app\n      key_hash: %q\n", hash)})
	r.mustStart(t)
	host := strings.TrimSuffix(strings.TrimPrefix(r.httpURL, "http://"), "/api/v1/messages")
	waitDial(t, host)
	waitDial(t, strings.TrimPrefix(r.adminURL, "http://"))
	return r, key, host
}

// sdkSubject finds the message whose Subject is subj among mx's.
func sdkMessage(mx *smtptest.Server, subj string) []byte {
	for _, m := range mx.Messages() {
		if bytes.Contains(m.Data, []byte("\r\nSubject: "+subj+"\r\n")) {
			return m.Data
		}
	}
	return nil
}

// varyingFields are what two submissions of one message differ in: the
// relay's Received, the Message-ID and Date it gives, the boundaries.
var (
	varyingFields = regexp.MustCompile(`(?m)^(Message-Id|Date): .*\r\n`)
	boundaries    = regexp.MustCompile(`[0-9a-f]{60}`)
	received      = regexp.MustCompile(`^Received: .*\r\n(\s.*\r\n)*`)
)

func normalized(b []byte) string {
	s := received.ReplaceAllString(string(b), "")
	return boundaries.ReplaceAllString(varyingFields.ReplaceAllString(s, ""), "B")
}

// ownAPIMessage sends the SDK's first message through relayq's own JSON
// API (subject subj) and returns its delivered bytes.
func ownAPIMessage(t *testing.T, r *relay, mx *smtptest.Server, key, subj string) []byte {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"from": "App <app@example.org>", "to": []string{"rcpt@example.net"},
		"subject": subj, "text": "Hello from the SDK", "html": "<p>Hello from the SDK</p>",
		"attachments": []map[string]any{{"filename": "report.txt", "content_type": "text/plain", "content": []byte(espAttachment)}}})
	req, _ := http.NewRequest(http.MethodPost, r.httpURL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("own API: %d", resp.StatusCode)
	}
	var got []byte
	mx.WaitFor(t, 30*time.Second, func() bool { got = sdkMessage(mx, subj); return got != nil })
	return got
}

// checkSameBytes compares the SDK's first message, as delivered, with the
// same message sent through relayq's own API.
func checkSameBytes(t *testing.T, r *relay, mx *smtptest.Server, key, tok string) {
	t.Helper()
	var sdk []byte
	mx.WaitFor(t, 30*time.Second, func() bool { sdk = sdkMessage(mx, tok+"-message"); return sdk != nil })
	own := ownAPIMessage(t, r, mx, key, tok+"-message")
	if normalized(sdk) != normalized(own) {
		t.Errorf("delivered bytes differ from relayq's own API's:\n%s\nown API:\n%s", sdk, own)
	}
}

// waitBatch waits until the 50 messages of the SDK's batch are delivered.
func waitBatch(t *testing.T, mx *smtptest.Server, tok string) {
	t.Helper()
	mx.WaitFor(t, 60*time.Second, func() bool {
		for i := 0; i < 50; i++ {
			if sdkMessage(mx, fmt.Sprintf("%s-batch-%d", tok, i)) == nil {
				return false
			}
		}
		return true
	})
}

// noneDelivered fails if any refused case's message reached the next hop.
func noneDelivered(t *testing.T, mx *smtptest.Server, tok string) {
	t.Helper()
	for _, m := range mx.Messages() {
		if bytes.Contains(m.Data, []byte("Subject: "+tok+"-refused")) {
			t.Errorf("a refused request was delivered:\n%s", m.Data)
		}
	}
}

// errorField decodes one field of a case's error.
func errorField(t *testing.T, c sdkCase, v any) {
	t.Helper()
	if c.OK || json.Unmarshal(c.Error, v) != nil {
		t.Fatalf("%s: ok=%v data=%s error=%s, want an error", c.Case, c.OK, c.Data, c.Error)
	}
}

// The Postmark SDK (npm postmark), pointed at relayq by requestHost: a
// message with an attachment is the same bytes as through relayq's own
// API; a batch of 50 is delivered; a wrong token, tracking, a template
// and a bad sender are each the error Postmark's SDK throws for them,
// and none is queued.
func TestPostmarkSDK(t *testing.T) {
	modules := espSDKs(t)
	mx := smtptest.NewServer(t)
	r, key, host := espRelay(t, mx)
	const tok = "tok-pm"
	cases := runSDK(t, modules, "postmark", host, key, tok)
	var sent struct {
		ErrorCode int
		MessageID string
	}
	if c := cases["message"]; !c.OK || json.Unmarshal(c.Data, &sent) != nil || sent.ErrorCode != 0 || sent.MessageID == "" {
		t.Fatalf("message: %+v", c)
	}
	var batch []struct{ ErrorCode int }
	if c := cases["batch"]; !c.OK || json.Unmarshal(c.Data, &batch) != nil || len(batch) != 50 {
		t.Fatalf("batch: %+v", c)
	}
	for _, want := range []struct {
		c, name string
		code    int
	}{
		{"bad-credentials", "InvalidAPIKeyError", 10},
		{"unsupported-field", "InvalidEmailRequestError", 300},
		{"unsupported-template", "InvalidEmailRequestError", 300},
		{"bad-sender", "InvalidEmailRequestError", 300},
	} {
		var e struct {
			Name    string
			Code    int
			Message string
		}
		errorField(t, cases[want.c], &e)
		if e.Name != want.name || e.Code != want.code {
			t.Errorf("%s: %+v, want %s with ErrorCode %d", want.c, e, want.name, want.code)
		}
	}
	waitBatch(t, mx, tok)
	checkSameBytes(t, r, mx, key, tok)
	noneDelivered(t, mx, tok)
}

// The Resend SDK (npm resend), pointed at relayq by baseUrl: a message
// with an attachment is the same bytes as through relayq's own API; a
// batch of 50 is delivered; a retry under the same idempotencyKey gets
// the same id and queues nothing, another body under it is refused; a
// scheduledAt an hour ahead waits in the queue as scheduled; a wrong key,
// a template and a bad sender are the errors Resend's SDK returns.
func TestResendSDK(t *testing.T) {
	modules := espSDKs(t)
	mx := smtptest.NewServer(t)
	r, key, host := espRelay(t, mx)
	const tok = "tok-rs"
	cases := runSDK(t, modules, "resend", host, key, tok)
	id := func(name string) string {
		t.Helper()
		var d struct{ ID string }
		if c := cases[name]; !c.OK || json.Unmarshal(c.Data, &d) != nil || d.ID == "" {
			t.Fatalf("%s: %+v", name, c)
		}
		return d.ID
	}
	id("message")
	var batch struct{ Data []struct{ ID string } }
	if c := cases["batch"]; !c.OK || json.Unmarshal(c.Data, &batch) != nil || len(batch.Data) != 50 {
		t.Fatalf("batch: %+v", c)
	}
	if first, retry := id("idempotent-first"), id("idempotent-retry"); first != retry {
		t.Errorf("a retry under the same key got %s, the first %s", retry, first)
	}
	scheduled := id("scheduled")
	m, err := r.admin.Show(context.Background(), scheduled)
	if err != nil || len(m.Recipients) != 1 || m.Recipients[0].Status != "scheduled" || m.Release.Before(time.Now().Add(50*time.Minute)) {
		t.Errorf("scheduled message %s: %+v, %v", scheduled, m, err)
	}
	for _, want := range []struct {
		c, name string
		status  int
	}{
		{"idempotent-other", "invalid_idempotent_request", 422},
		{"bad-credentials", "invalid_api_key", 403},
		{"unsupported-field", "validation_error", 422},
		{"bad-sender", "validation_error", 400},
	} {
		var e struct {
			Name       string
			StatusCode int
			Message    string
		}
		errorField(t, cases[want.c], &e)
		if e.Name != want.name || e.StatusCode != want.status {
			t.Errorf("%s: %+v, want %s %d", want.c, e, want.name, want.status)
		}
	}
	waitBatch(t, mx, tok)
	checkSameBytes(t, r, mx, key, tok)
	noneDelivered(t, mx, tok)
	n := 0
	for _, m := range mx.Messages() {
		if bytes.Contains(m.Data, []byte("Subject: "+tok+"-idem\r\n")) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the idempotent message was delivered %d times, want once", n)
	}
}

// The SendGrid SDK (npm @sendgrid/mail), pointed at relayq by the
// client's baseUrl: a message with an attachment is the same bytes as
// through relayq's own API; 50 messages are delivered; a sendAt an hour
// ahead waits in the queue as scheduled; a wrong key, a template, open
// tracking and a bad sender are the errors SendGrid's SDK throws.
func TestSendGridSDK(t *testing.T) {
	modules := espSDKs(t)
	mx := smtptest.NewServer(t)
	r, key, host := espRelay(t, mx)
	const tok = "tok-sg"
	cases := runSDK(t, modules, "sendgrid", host, key, tok)
	type sent struct {
		StatusCode int
		MessageID  string
	}
	ids := func(name string, n int) []sent {
		t.Helper()
		var d []sent
		if c := cases[name]; !c.OK || json.Unmarshal(c.Data, &d) != nil || len(d) != n || d[0].StatusCode != 202 || d[0].MessageID == "" {
			t.Fatalf("%s: %+v", name, cases[name])
		}
		return d
	}
	ids("message", 1)
	ids("batch", 50)
	scheduled := ids("scheduled", 1)[0].MessageID
	m, err := r.admin.Show(context.Background(), scheduled)
	if err != nil || len(m.Recipients) != 1 || m.Recipients[0].Status != "scheduled" || m.Release.Before(time.Now().Add(50*time.Minute)) {
		t.Errorf("scheduled message %s: %+v, %v", scheduled, m, err)
	}
	for _, want := range []struct {
		c     string
		code  int
		field string
	}{
		{"bad-credentials", 401, ""},
		{"unsupported-field", 400, "template_id"},
		{"unsupported-tracking", 400, "tracking_settings.open_tracking"},
		{"bad-sender", 400, "from.email"},
	} {
		var e struct {
			Code int
			Body struct {
				Errors []struct {
					Message string
					Field   *string
				}
			}
		}
		errorField(t, cases[want.c], &e)
		if e.Code != want.code || len(e.Body.Errors) != 1 {
			t.Errorf("%s: %+v, want %d", want.c, e, want.code)
			continue
		}
		if f := e.Body.Errors[0].Field; want.field != "" && (f == nil || *f != want.field) {
			t.Errorf("%s: field %v, want %s", want.c, f, want.field)
		}
	}
	waitBatch(t, mx, tok)
	checkSameBytes(t, r, mx, key, tok)
	noneDelivered(t, mx, tok)
}
