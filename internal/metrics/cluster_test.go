package metrics

import (
	"strings"
	"sync/atomic"
	"testing"
)

func TestClusterRedisUp(t *testing.T) {
	m := New()
	if body := scrape(t, m); strings.Contains(body, "relayq_cluster_redis_up") {
		t.Error("a single node exports relayq_cluster_redis_up")
	}
	var up atomic.Bool
	up.Store(true)
	m.WatchCluster(up.Load)
	wantLines(t, scrape(t, m), "relayq_cluster_redis_up 1")
	up.Store(false)
	wantLines(t, scrape(t, m), "relayq_cluster_redis_up 0")
}
