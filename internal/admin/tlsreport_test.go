package admin

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

// The TLS report of a day is RFC 8460 JSON built from what delivery
// recorded in the store: successes and failures per policy, failure
// details per MX and result type.
func TestTLSReport(t *testing.T) {
	e := newEnv(t, "")
	day := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, r := range []queue.TLSResult{
		{Policy: "sts", MX: "mx1.example.com"}, {Policy: "sts", MX: "mx1.example.com"},
		{Policy: "sts", MX: "mx2.example.com", Failure: "starttls-not-supported"},
		{Policy: "tlsa", MX: "mx3.example.com", Failure: "tlsa-invalid"},
	} {
		if err := e.store.TLS().Record("example.com", day, r); err != nil {
			t.Fatal(err)
		}
	}
	code, body := e.do("GET", "/api/v1/tls-report?domain=Example.com&day=2026-11-30")
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"organization-name", "date-range", "contact-info", "report-id", "policies"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("report lacks %q: %s", k, body)
		}
	}
	var rep TLSReport
	decode(t, body, &rep)
	if rep.DateRange.Start != "2026-11-30T00:00:00Z" || len(rep.Policies) != 2 {
		t.Fatalf("report %+v", rep)
	}
	sts := rep.Policies[0]
	if sts.Policy.Type != "sts" || sts.Policy.Domain != "example.com" || sts.Summary.Successful != 2 || sts.Summary.Failed != 1 ||
		len(sts.FailureDetails) != 1 || sts.FailureDetails[0].ResultType != "starttls-not-supported" || sts.FailureDetails[0].ReceivingMX != "mx2.example.com" {
		t.Fatalf("sts entry %+v", sts)
	}
	if tlsa := rep.Policies[1]; tlsa.Policy.Type != "tlsa" || tlsa.Summary.Failed != 1 {
		t.Fatalf("tlsa entry %+v", tlsa)
	}

	// Another day has an empty report; bad parameters are 400.
	if code, body := e.do("GET", "/api/v1/tls-report?domain=example.com&day=2026-12-01"); code != http.StatusOK {
		t.Fatalf("empty day: %d %s", code, body)
	}
	for _, q := range []string{"?domain=example.com", "?domain=example.com&day=30.11.2026", "?day=2026-11-30"} {
		if code, _ := e.do("GET", "/api/v1/tls-report"+q); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", q, code)
		}
	}
}
