package httpsubmit

import (
	"net/http"
	"strings"
	"testing"
)

// A query parameter the submission does not take is refused with 400
// naming it, and nothing is queued: ignored, a misspelt ?too= sent the
// message to the header's addresses, and ?send_at= on a JSON submission
// sent it at once.
func TestUnknownQueryParameterRefused(t *testing.T) {
	e := start(t, envOpts{trusted: true})
	const jsonMsg = `{"from":"app@example.org","to":["a@example.net"],"subject":"s","text":"t"}`
	for _, tc := range []struct {
		name, query, ctype, body string
		want                     string
	}{
		{"raw, misspelt to", "?from=bounce@example.org&too=x@example.net", "message/rfc822", rawMsg,
			`unknown query parameter "too" (did you mean "to"?); this endpoint takes from, to, send_at`},
		{"raw, unknown", "?priority=high", "message/rfc822", rawMsg, `unknown query parameter "priority"`},
		{"json, envelope in the query", "?send_at=2030-01-01T00:00:00Z", "application/json", jsonMsg,
			`unknown query parameter "send_at"; this endpoint takes no query parameters (with a JSON body, give "send_at" in the JSON)`},
		{"json, unknown", "?dry_run=1", "application/json", jsonMsg, `unknown query parameter "dry_run"`},
		{"bad query string", "?to=%zz", "message/rfc822", rawMsg, "bad query string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.post(t, tc.query, tc.ctype, "", []byte(tc.body))
			if r.status != http.StatusBadRequest || r.err.Code != "5.5.4" || !strings.Contains(r.err.Error, tc.want) {
				t.Errorf("got %d %+v, want 400 5.5.4 %q", r.status, r.err, tc.want)
			}
		})
	}
	if n := e.obs.accepted.Load(); n != 0 {
		t.Errorf("accepted %d messages, want none", n)
	}
	// The parameters it takes still work.
	if r := e.post(t, "?from=bounce@example.org&to=x@example.net", "message/rfc822", "", []byte(rawMsg)); r.status != http.StatusAccepted {
		t.Errorf("known parameters: %d %+v", r.status, r.err)
	}
}
