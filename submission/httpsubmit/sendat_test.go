package httpsubmit

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

// send_at holds a JSON or raw submission until then: stored scheduled at
// that time; a time in the past is now; beyond max_hold or malformed is
// 400 and nothing is queued.
func TestSendAtSchedules(t *testing.T) {
	e := start(t, envOpts{trusted: true, maxHold: 24 * time.Hour})
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	stored := func(a answer) *queue.Envelope {
		t.Helper()
		if a.status != http.StatusAccepted {
			t.Fatalf("%d %s, want 202", a.status, a.body)
		}
		id := strings.Split(strings.SplitN(string(a.body), `"queue_id":"`, 2)[1], `"`)[0]
		env, err := e.store.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	js := func(sendAt string) string {
		return fmt.Sprintf(`{"from":"app@example.org","to":["b@example.net"],"subject":"later","text":"hi","send_at":%q}`, sendAt)
	}
	for _, env := range []*queue.Envelope{
		stored(postReceipt(t, e, "", js(at.Format(time.RFC3339)))),
		stored(e.postKey(t, "", "message/rfc822", strings.NewReader("From: app@example.org\r\nTo: b@example.net\r\n\r\nhi\r\n"), "?send_at="+url.QueryEscape(at.Format(time.RFC3339)))),
	} {
		if !env.Release.Equal(at) || env.Recipients[0].Status != queue.StatusScheduled || !env.Recipients[0].NextAttempt.Equal(at) {
			t.Errorf("stored release %v, %s; want %v, scheduled", env.Release, env.Recipients[0].Status, at)
		}
	}
	if env := stored(postReceipt(t, e, "", js(time.Now().Add(-time.Hour).Format(time.RFC3339)))); !env.Release.IsZero() || env.Recipients[0].Status == queue.StatusScheduled {
		t.Errorf("send_at in the past: stored %+v", env)
	}
	queued := e.obs.accepted.Load()
	for _, bad := range []string{time.Now().Add(25 * time.Hour).Format(time.RFC3339), "tomorrow", "2026-12-01 08:00"} {
		a := postReceipt(t, e, "", js(bad))
		if a.status != http.StatusBadRequest || !strings.Contains(string(a.body), "5.5.4") && !strings.Contains(string(a.body), "5.6.0") {
			t.Errorf("send_at %q: %d %s, want 400", bad, a.status, a.body)
		}
	}
	if n := e.obs.accepted.Load(); n != queued {
		t.Errorf("refused send_at queued %d messages", n-queued)
	}
}

func FuzzParseSendAt(f *testing.F) {
	f.Add("2026-12-01T08:00:00Z")
	f.Add("2026-12-01t08:00:00.5+01:00")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		h, e := parseSendAt(v)
		if e != nil && e.Code != 554 {
			t.Fatalf("%q: %v", v, e)
		}
		if e == nil && v != "" && h.Until.IsZero() {
			t.Fatalf("%q accepted as no time", v)
		}
	})
}
