package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/relayq/relayq/internal/deliverability"
)

var (
	descAcceptance = prometheus.NewDesc(namespace+"_deliverability_recipients",
		"Recipient outcomes per provider (a fixed list and other) and stream over the last hour or 24 hours (window 1h, 24h), from the event stream; outcome delivered, deferred, bounced, complained, unsubscribed.",
		[]string{"provider", "stream", "outcome", "window"}, nil)
	descComplaintRate = prometheus.NewDesc(namespace+"_deliverability_complaint_rate",
		"Complaints per delivered recipient per provider and stream over the window (the big providers' line is 0.003).",
		[]string{"provider", "stream", "window"}, nil)
)

// acceptanceCollector reads the deliverability figures at each scrape.
type acceptanceCollector struct{ rows func() []deliverability.Row }

// WatchDeliverability exports the figures rows returns (per provider and
// stream; sender domains stay out of the labels).
func (m *Metrics) WatchDeliverability(rows func() []deliverability.Row) {
	m.reg.MustRegister(acceptanceCollector{rows: rows})
}

func (acceptanceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descAcceptance
	ch <- descComplaintRate
}

func (c acceptanceCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range deliverability.ByProvider(c.rows()) {
		for _, w := range []struct {
			name string
			c    deliverability.Counts
			rate float64
		}{{"1h", r.Hour, r.ComplaintRate1h}, {"24h", r.Day, r.ComplaintRate24h}} {
			for _, o := range []struct {
				name string
				n    int
			}{{"delivered", w.c.Delivered}, {"deferred", w.c.Deferred}, {"bounced", w.c.Bounced}, {"complained", w.c.Complained}, {"unsubscribed", w.c.Unsubscribed}} {
				ch <- prometheus.MustNewConstMetric(descAcceptance, prometheus.GaugeValue, float64(o.n), r.Provider, r.Stream, o.name, w.name)
			}
			ch <- prometheus.MustNewConstMetric(descComplaintRate, prometheus.GaugeValue, w.rate, r.Provider, r.Stream, w.name)
		}
	}
}
