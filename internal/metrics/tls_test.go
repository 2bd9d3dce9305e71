package metrics

import (
	"testing"

	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/queue"
)

// Deliveries count by TLS policy, failures by policy and reason, testing
// mode and fallbacks to plaintext apart; unknown values never become labels.
func TestTLSCounters(t *testing.T) {
	m := New()
	obs, ok := m.Delivery().(delivery.TLSObserver)
	if !ok {
		t.Fatal("the delivery observer does not count TLS")
	}
	obs.SecuredBy(smtpclient.TLSInfo{Policy: smtpclient.PolicyDANE, Version: "TLSv1.3"}, queue.StatusDelivered)
	obs.SecuredBy(smtpclient.TLSInfo{Policy: smtpclient.PolicyMTASTS, Failure: smtpclient.FailStartTLSNotSupported}, queue.StatusDeferred)
	obs.SecuredBy(smtpclient.TLSInfo{Policy: smtpclient.PolicyMTASTS, Failure: smtpclient.FailMXMismatch, Testing: true}, queue.StatusDelivered)
	obs.SecuredBy(smtpclient.TLSInfo{Policy: "weird", Failure: "odd"}, queue.StatusDeferred)
	obs.SecuredBy(smtpclient.TLSInfo{Policy: smtpclient.PolicyNone, Failure: smtpclient.FailStartTLSNotSupported, Fallback: true}, queue.StatusDelivered)
	obs.SecuredBy(smtpclient.TLSInfo{Policy: smtpclient.PolicyNone, Fallback: true}, queue.StatusDelivered)
	wantLines(t, scrape(t, m),
		`relayq_delivery_tls_total{policy="dane",result="delivered"} 1`,
		`relayq_delivery_tls_total{policy="mta-sts",result="deferred"} 1`,
		`relayq_delivery_tls_total{policy="mta-sts",result="delivered"} 1`,
		`relayq_delivery_tls_total{policy="other",result="deferred"} 1`,
		`relayq_delivery_tls_failures_total{enforced="true",policy="mta-sts",reason="starttls-not-supported"} 1`,
		`relayq_delivery_tls_failures_total{enforced="false",policy="mta-sts",reason="mx-mismatch"} 1`,
		`relayq_delivery_tls_failures_total{enforced="true",policy="other",reason="other"} 1`,
		`relayq_delivery_tls_total{policy="none",result="delivered"} 2`,
		`relayq_delivery_tls_failures_total{enforced="false",policy="none",reason="starttls-not-supported"} 1`,
		`relayq_delivery_tls_fallback_total{result="delivered"} 2`,
	)
}
