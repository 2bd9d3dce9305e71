package httpsubmit

import (
	"net/http"
	"strings"
	"testing"
)

// A JSON body that names a member twice in one object is refused with 400
// naming it: encoding/json would keep the last silently, and {"to": [A],
// "to": [B]} would go to B alone. Members of different objects (two
// attachments) are no duplicates.
func TestJSONDuplicateKeysRefused(t *testing.T) {
	e := start(t, envOpts{trusted: true})
	const base = `"from": "app@example.org", "subject": "s", "text": "hi"`
	cases := []struct {
		name, body, dup string
	}{
		{"to twice", `{` + base + `, "to": ["a@example.net"], "to": ["b@example.net"]}`, "to"},
		{"differing case", `{` + base + `, "to": ["a@example.net"], "To": ["b@example.net"]}`, "To"},
		{"header twice", `{` + base + `, "to": ["a@example.net"], "headers": {"X-Tag": "1", "x-tag": "2"}}`, "x-tag"},
		{"inside an attachment", `{` + base + `, "to": ["a@example.net"], "attachments": [{"filename": "a.txt", "filename": "b.txt", "content": "aGk="}]}`, "filename"},
		{"two attachments", `{` + base + `, "to": ["a@example.net"], "attachments": [{"filename": "a.txt", "content": "aGk="}, {"filename": "b.txt", "content": "aGk="}]}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.post(t, "", "application/json", "", []byte(tc.body))
			if tc.dup == "" {
				if r.status != http.StatusAccepted {
					t.Fatalf("got %d %+v, want 202", r.status, r.err)
				}
				return
			}
			if r.status != http.StatusBadRequest || !strings.Contains(r.err.Error, `duplicate key "`+tc.dup+`"`) {
				t.Fatalf("got %d %+v, want 400 naming %q", r.status, r.err, tc.dup)
			}
		})
	}
}
