package queryparam

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	events := []string{"after", "limit", "type", "wait", "queue_id", "message_id"}
	for _, tc := range []struct {
		name  string
		query string
		known []string
		// want is "" for accepted, else text the error must contain.
		want string
		// unknown is the name an *UnknownError must carry.
		unknown string
	}{
		{"no query", "", events, "", ""},
		{"known names", "after=0000000000000001&limit=2&type=bounced&type=expired", events, "", ""},
		{"empty and repeated values are the endpoint's business", "queue_id=&limit=1&limit=2", events, "", ""},
		{"unknown name, with the nearest known one", "queueid=ABC", events, `unknown query parameter "queueid" (did you mean "queue_id"?); this endpoint takes after, limit`, "queueid"},
		{"unknown name, nothing near", "status=held", events, `unknown query parameter "status"; this endpoint takes after`, "status"},
		{"first unknown in sorted order", "zz=1&limit=1&aa=2", events, `"aa"`, "aa"},
		{"an endpoint that takes none", "x=1", nil, `unknown query parameter "x"; this endpoint takes no query parameters`, "x"},
		{"a name without a value is still a name", "verbose", events, `"verbose"`, "verbose"},
		{"a percent-encoded name is decoded", "queue%5Fid=A&message%5Fid=B", events, "", ""},
		{"bad escape", "queue_id=%zz", events, "bad query string", ""},
		{"semicolon separator", "limit=1;queue_id=A", events, "bad query string", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Check(tc.query, tc.known...)
			if tc.want == "" {
				if err != nil || q == nil {
					t.Fatalf("Check(%q) = %v, %v; want accepted", tc.query, q, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check(%q) error %v, want it to contain %q", tc.query, err, tc.want)
			}
			var u *UnknownError
			if got := errors.As(err, &u); got != (tc.unknown != "") || got && u.Name != tc.unknown {
				t.Errorf("Check(%q): UnknownError %+v, want name %q", tc.query, u, tc.unknown)
			}
		})
	}
}

// FuzzCheck: whatever the query string, Check never panics, and what it
// accepts names only known parameters.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"", "limit=1", "queueid=A", "a=%zz", "x;y", "=", "&&", "type=a&type=b"} {
		f.Add(s)
	}
	known := []string{"after", "limit", "type"}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := Check(raw, known...)
		if err != nil {
			return
		}
		for name := range q {
			if name != "after" && name != "limit" && name != "type" {
				t.Fatalf("Check(%q) accepted %q", raw, name)
			}
		}
	})
}
