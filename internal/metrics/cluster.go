package metrics

import "github.com/prometheus/client_golang/prometheus"

// WatchCluster exports relayq_cluster_redis_up, read from up at every
// scrape: 1 while the shaping state is shared through Redis, 0 while the
// node shapes with local limits (cluster.Node.RedisUp). Call it once, only
// when cluster.redis_url is set; a single node has no such metric. Later
// calls are ignored.
func (m *Metrics) WatchCluster(up func() bool) {
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace, Name: "cluster_redis_up",
		Help: "1 while the shaping state is shared with the other nodes through Redis, 0 while this node shapes with its share of each limit.",
	}, func() float64 {
		if up() {
			return 1
		}
		return 0
	})
	_ = m.reg.Register(g) // AlreadyRegisteredError on a second call: keep the first
}

// WatchAdopted exports relayq_cluster_adopted_messages{queue}: for each
// queue file this node adopted from a lost node and still delivers (by
// its path), how many messages it holds, read from adopted at every
// scrape.
func (m *Metrics) WatchAdopted(adopted func() map[string]int) {
	_ = m.reg.Register(adoptedCollector{adopted}) // a second call keeps the first
}

var adoptedDesc = prometheus.NewDesc(namespace+"_cluster_adopted_messages",
	"Messages held by each queue file this node adopted from a lost node and delivers until it is empty.",
	[]string{"queue"}, nil)

type adoptedCollector struct{ read func() map[string]int }

func (adoptedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- adoptedDesc }

func (c adoptedCollector) Collect(ch chan<- prometheus.Metric) {
	for q, n := range c.read() {
		ch <- prometheus.MustNewConstMetric(adoptedDesc, prometheus.GaugeValue, float64(n), q)
	}
}
