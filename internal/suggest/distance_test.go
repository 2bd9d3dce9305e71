package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"listen", "listen", 0},
		{"lisen", "listen", 1},
		{"queue.pth", "queue.path", 1},
		{"lst", "list", 1},
		{"suspensions", "resume", 9},
		{"", "abc", 3},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
