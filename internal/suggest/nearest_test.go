package suggest

import "testing"

func TestNearest(t *testing.T) {
	known := []string{"after", "limit", "type", "wait", "queue_id", "message_id"}
	for _, tc := range []struct {
		word, want string
	}{
		{"queueid", "queue_id"},
		{"Queue_ID", "queue_id"}, // case is not an edit
		{"messageid", "message_id"},
		{"limt", "limit"},
		{"types", "type"},
		{"status", ""}, // nothing within two edits
		{"", ""},
	} {
		if got := Nearest(tc.word, known); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
	if got := Nearest("x", nil); got != "" {
		t.Errorf("Nearest with nothing known = %q", got)
	}
}
