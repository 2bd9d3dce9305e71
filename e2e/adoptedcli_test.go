package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/cluster"
	"github.com/relayq/relayq/internal/clock"
)

// `relayq queue adopted` lists a queue a node adopted (path, identity,
// adopter, token) from any node's config, and `relayq queue
// release-adopted PATH` asks the adopter to let it go, which it hears at
// its next renewal; a queue nobody adopted is refused by name.
func TestAdoptedQueuesOnTheCommandLine(t *testing.T) {
	rds := startRedis(t)
	ctx := context.Background()
	const id, path = "00112233445566778899aabbccddeeff", "/var/lib/relayq/volumes/a/queue.db"
	b, err := cluster.NewLeases(cluster.Config{RedisURL: rds.url(), NodeName: "node-b"}, clock.Real, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var ls *cluster.Lease
	// The first look starts the lapse; adopt_after 1 ms later it is taken.
	for ls == nil {
		if ls, err = b.Adopt(ctx, id, path, time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(t.TempDir(), "relayq.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("cluster:\n  redis_url: %q\n  node_name: node-c\n", rds.url())), 0o600)

	out, code := runRelayq(t, nil, "queue", "adopted", "--config", cfg)
	if code != 0 || !strings.Contains(out, path) || !strings.Contains(out, id) || !strings.Contains(out, "node-b") {
		t.Fatalf("queue adopted (exit %d):\n%s", code, out)
	}
	out, code = runRelayq(t, nil, "queue", "release-adopted", "--config", cfg, "/elsewhere/queue.db")
	if code == 0 || !strings.Contains(out, "/elsewhere/queue.db is not an adopted queue") {
		t.Fatalf("release-adopted of an unknown queue (exit %d):\n%s", code, out)
	}
	out, code = runRelayq(t, nil, "queue", "release-adopted", "--config", cfg, path)
	if code != 0 || !strings.Contains(out, "asked node-b") {
		t.Fatalf("release-adopted (exit %d):\n%s", code, out)
	}
	if err := ls.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ls.ReleaseAsked():
	default:
		t.Fatal("the adopter did not hear the release at its renewal")
	}
}
