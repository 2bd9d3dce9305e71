package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/relayq/relayq/internal/redact"
)

// WebhookObserver feeds the webhook metrics; it satisfies
// webhook.Observer. Its label values are the configured webhooks (their
// URL without query or credentials), so their number is bounded by the
// configuration.
type WebhookObserver struct {
	backlog  *prometheus.GaugeVec
	sent     *prometheus.CounterVec
	failures *prometheus.CounterVec
}

// Webhook registers the webhook metrics for the given hook names and
// returns their observer. Call it once.
func (m *Metrics) Webhook(names []string) *WebhookObserver {
	o := &WebhookObserver{
		backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "relayq_webhook_backlog_events",
			Help: "Events not yet accepted by the webhook.",
		}, []string{"webhook"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relayq_webhook_events_sent_total",
			Help: "Events the webhook accepted (2xx).",
		}, []string{"webhook"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relayq_webhook_failures_total",
			Help: "Batches the webhook did not accept (error or non-2xx); each is retried.",
		}, []string{"webhook"}),
	}
	for _, n := range names {
		l := webhookLabel(n)
		o.backlog.WithLabelValues(l)
		o.sent.WithLabelValues(l)
		o.failures.WithLabelValues(l)
	}
	m.reg.MustRegister(o.backlog, o.sent, o.failures)
	return o
}

// webhookLabel drops a URL's userinfo, query and fragment: they may hold
// secrets. Log lines name the webhook with the same function.
func webhookLabel(name string) string { return redact.URL(name) }

// Sent counts events a webhook accepted.
func (o *WebhookObserver) Sent(hook string, n int) {
	o.sent.WithLabelValues(webhookLabel(hook)).Add(float64(n))
}

// Failed counts a batch a webhook refused or never answered.
func (o *WebhookObserver) Failed(hook string) { o.failures.WithLabelValues(webhookLabel(hook)).Inc() }

// Backlog sets how many events wait for a webhook.
func (o *WebhookObserver) Backlog(hook string, n int) {
	o.backlog.WithLabelValues(webhookLabel(hook)).Set(float64(n))
}
