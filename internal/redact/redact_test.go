package redact

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestURLShowsTheEndpointOnly(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"https://user:pw@app.example.org/h?token=abc", "https://app.example.org/h"},
		{"https://app.example.org/h?token=abc#frag", "https://app.example.org/h"},
		{"redis://:p@ss@10.0.0.1:6379/0", "redis://10.0.0.1:6379/0"},
		{"rediss://user@redis.example:6380", "rediss://redis.example:6380"},
		{"https://app.example.org/a@b", "https://app.example.org/a@b"}, // '@' in the path is no userinfo
		{"http://u:pw@bad host/x?token=abc", "http://bad host/x"},      // not a valid URL: cut all the same
		{"", ""},
	} {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestErrorHidesTheURLOfAURLError(t *testing.T) {
	bad := "http://u:pw@bad" + strings.Repeat(" ", 1) + "host/?token=abc" // a space in the host: refused
	_, perr := url.Parse(bad)
	err := fmt.Errorf("cluster: %w", Error(perr))
	if s := err.Error(); strings.Contains(s, "pw") || strings.Contains(s, "abc") || !strings.Contains(s, "bad host") {
		t.Errorf("Error: %s", s)
	}
	if !errors.Is(Error(perr), perr.(*url.Error).Err) {
		t.Error("Error loses the cause")
	}
	if Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
}
