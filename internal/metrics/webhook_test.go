package metrics

import (
	"strings"
	"testing"
)

func TestWebhookMetricsHideSecretsInURLs(t *testing.T) {
	m := New()
	o := m.Webhook([]string{"https://user:pw@app.example.org/h?token=x"})
	o.Failed("https://user:pw@app.example.org/h?token=x")
	o.Backlog("https://user:pw@app.example.org/h?token=x", 42)
	o.Sent("https://user:pw@app.example.org/h?token=x", 3)
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "relayq_webhook") {
			continue
		}
		n++
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetValue() != "https://app.example.org/h" {
					t.Errorf("label %q", l.GetValue())
				}
			}
		}
	}
	if n != 3 {
		t.Errorf("%d webhook metric families, want 3", n)
	}
}
