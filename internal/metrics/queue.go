package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/relayq/relayq/queue"
)

// recipientStates are the queue.Status values exported as the state label;
// every one is always present (0 when no recipient is in it).
var recipientStates = []queue.Status{
	queue.StatusQueued, queue.StatusDeferred, queue.StatusDelivered, queue.StatusBounced, queue.StatusScheduled,
}

// Descriptions of the queue metrics, read from one Stats snapshot per scrape.
var (
	descRecipients = prometheus.NewDesc(namespace+"_queue_recipients",
		"Recipients of stored messages, by state.", []string{"state"}, nil)
	descMessages = prometheus.NewDesc(namespace+"_queue_messages",
		"Messages stored in the queue, held ones included.", nil, nil)
	descStreamMessages = prometheus.NewDesc(namespace+"_queue_stream_messages",
		"Messages stored in the queue by stream (streams are configured: a bounded set).", []string{"stream"}, nil)
	descHeld = prometheus.NewDesc(namespace+"_queue_held_messages",
		"Messages on hold (never attempted until released).", nil, nil)
	descOldest = prometheus.NewDesc(namespace+"_queue_oldest_message_age_seconds",
		"Age of the oldest stored message; 0 when the queue is empty.", nil, nil)
	descCommits = prometheus.NewDesc(namespace+"_queue_commits_total",
		"Group commits (one fsync pair each) since the queue was opened.", nil, nil)
	descWrites = prometheus.NewDesc(namespace+"_queue_committed_writes_total",
		"Write requests carried by those commits; writes/commits is the mean fsync batch size.", nil, nil)
	descQuarantined = prometheus.NewDesc(namespace+"_queue_quarantined_messages",
		"Damaged messages in quarantine (never delivered); see relayq queue list --quarantined.", nil, nil)
	descQuarantinedTotal = prometheus.NewDesc(namespace+"_queue_quarantined_total",
		"Messages found damaged (checksum mismatch, undecodable, body missing) and quarantined since start.", nil, nil)
	descFileBytes = prometheus.NewDesc(namespace+"_queue_file_bytes",
		"Size of the queue file.", nil, nil)
	descFreeBytes = prometheus.NewDesc(namespace+"_queue_free_bytes",
		"Bytes of the queue file that hold no data (reused by later writes; relayq queue compact returns them).", nil, nil)
)

// queueCollector exports queue.Stats. A custom collector rather than one
// GaugeFunc per value so that a scrape sees one consistent snapshot and
// takes the stats lock once.
type queueCollector struct{ m *Metrics }

// Describe sends every queue metric's description.
func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRecipients, descMessages, descStreamMessages, descHeld, descOldest, descCommits, descWrites,
		descQuarantined, descQuarantinedTotal, descFileBytes, descFreeBytes} {
		ch <- d
	}
}

// Collect reads the stats once; it sends nothing until WatchQueue was called.
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.m.stats.Load()
	if f == nil {
		return
	}
	st := (*f)()
	for _, s := range recipientStates {
		ch <- prometheus.MustNewConstMetric(descRecipients, prometheus.GaugeValue, float64(st.Recipients[s]), string(s))
	}
	ch <- prometheus.MustNewConstMetric(descMessages, prometheus.GaugeValue, float64(st.Messages))
	for name, n := range st.Streams {
		ch <- prometheus.MustNewConstMetric(descStreamMessages, prometheus.GaugeValue, float64(n), name)
	}
	ch <- prometheus.MustNewConstMetric(descHeld, prometheus.GaugeValue, float64(st.Held))
	age := 0.0
	if !st.Oldest.IsZero() {
		age = max(c.m.clock.Now().Sub(st.Oldest).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(descCommits, prometheus.CounterValue, float64(st.Commits))
	ch <- prometheus.MustNewConstMetric(descWrites, prometheus.CounterValue, float64(st.CommittedWrites))
	ch <- prometheus.MustNewConstMetric(descQuarantined, prometheus.GaugeValue, float64(st.Quarantined))
	ch <- prometheus.MustNewConstMetric(descQuarantinedTotal, prometheus.CounterValue, float64(st.QuarantinedSinceOpen))
	ch <- prometheus.MustNewConstMetric(descFileBytes, prometheus.GaugeValue, float64(st.FileBytes))
	ch <- prometheus.MustNewConstMetric(descFreeBytes, prometheus.GaugeValue, float64(st.FreeBytes))
}
