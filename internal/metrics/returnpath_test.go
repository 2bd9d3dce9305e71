package metrics

import "testing"

func TestReturnPathReports(t *testing.T) {
	m := New()
	n := map[string]int64{"recorded": 3, "unknown_message": 1}
	m.WatchReturnPath(func(o string) int64 { return n[o] })
	wantLines(t, scrape(t, m),
		`relayq_returnpath_reports_total{outcome="recorded"} 3`,
		`relayq_returnpath_reports_total{outcome="unknown_message"} 1`,
		`relayq_returnpath_reports_total{outcome="forwarded"} 0`)
}
