package metrics

import (
	"testing"

	"github.com/relayq/relayq/delivery"
)

// Each configured egress source has its attempts counted by result, from
// the start at 0; the engine finds the counter through the Observer.
func TestAttemptsBySource(t *testing.T) {
	m := New()
	m.Sources([]string{"ip2", "ip3"})
	so := m.Delivery().(delivery.SourceObserver) // the engine finds it this way
	so.AttemptedFrom("ip2", "delivered")
	so.AttemptedFrom("ip2", "delivered")
	so.AttemptedFrom("ip2", "something-new")
	wantLines(t, scrape(t, m),
		`relayq_delivery_source_attempts_total{result="delivered",source="ip2"} 2`,
		`relayq_delivery_source_attempts_total{result="other",source="ip2"} 1`,
		`relayq_delivery_source_attempts_total{result="deferred",source="ip3"} 0`,
	)
}
