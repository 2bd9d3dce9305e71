package metrics

import "testing"

func TestBuildInfoMetric(t *testing.T) {
	m := New()
	m.SetBuildInfo("v1.2.3", "go1.26.0", "abc")
	wantLines(t, scrape(t, m), `relayq_build_info{commit="abc",goversion="go1.26.0",version="v1.2.3"} 1`)
}
