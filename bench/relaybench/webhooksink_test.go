package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The webhook receiver answers 200 to a batch and counts its events, and
// tells a body that is not a batch with 400, so a relay posting something
// else is seen in its retries rather than counted.
func TestHookCounter(t *testing.T) {
	h := &hookCounter{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, c := range []struct {
		body string
		want int
	}{
		{`{"events":[{"id":"1"},{"id":"2"}]}`, http.StatusOK},
		{`{"events":[{"id":"3"}]}`, http.StatusOK},
		{`not json`, http.StatusBadRequest},
	} {
		resp, err := http.Post(srv.URL+"/hook", "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("POST %s: %d, want %d", c.body, resp.StatusCode, c.want)
		}
	}
	if b, e := h.batches.Load(), h.events.Load(); b != 2 || e != 3 {
		t.Errorf("counted %d batches, %d events; want 2, 3", b, e)
	}
}
