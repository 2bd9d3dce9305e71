package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestClusterSettings(t *testing.T) {
	dir := t.TempDir()
	pass := writeFile(t, dir, "redis.pass", "s3cret\n")
	host, _ := os.Hostname()
	tests := []struct {
		name string
		file string
		env  map[string]string
		want Cluster
	}{
		{"single node by default", "", nil, Cluster{NodeName: host, ExpectedNodes: 1, Adopt: []string{}, AdoptAfter: 30 * time.Second}},
		{"redis with a password file", "cluster:\n  redis_url: redis://10.0.0.9/1\n  redis_password_file: " + pass + "\n  node_name: relay-a\n  expected_nodes: 3\n",
			nil, Cluster{RedisURL: "redis://10.0.0.9/1", RedisPasswordFile: pass, NodeName: "relay-a", ExpectedNodes: 3, Adopt: []string{}, AdoptAfter: 30 * time.Second}},
		{"TLS from the environment", "", map[string]string{"RELAYQ_CLUSTER_REDIS_URL": "rediss://user:pw@redis.internal:6380/0", "RELAYQ_CLUSTER_EXPECTED_NODES": "2"},
			Cluster{RedisURL: "rediss://user:pw@redis.internal:6380/0", NodeName: host, ExpectedNodes: 2, Adopt: []string{}, AdoptAfter: 30 * time.Second}},
		{"adoption", "cluster:\n  redis_url: redis://10.0.0.9/1\n  node_name: relay-b\n  adopt: [\"/vol/*/queue.db\"]\n  adopt_after: 45s\n",
			nil, Cluster{RedisURL: "redis://10.0.0.9/1", NodeName: "relay-b", ExpectedNodes: 1, Adopt: []string{"/vol/*/queue.db"}, AdoptAfter: 45 * time.Second}},
		{"drain on stop", "cluster:\n  drain_on_stop: true\n  drain_to: lb.internal:25\n",
			nil, Cluster{NodeName: host, ExpectedNodes: 1, Adopt: []string{}, AdoptAfter: 30 * time.Second, DrainOnStop: true, DrainTo: "lb.internal:25"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := loadWith(t, tt.file, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Cluster, tt.want) {
				t.Errorf("Cluster = %+v; want %+v", c.Cluster, tt.want)
			}
		})
	}
}

// A wrong cluster value stops relayq at start-up with the key and file
// named, and never shows the Redis password.
func TestClusterRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty.pass", "\n")
	pass := writeFile(t, dir, "redis.pass", "s3cret")
	missing := filepath.Join(dir, "nope.pass")
	tests := []struct {
		name string
		file string
		env  map[string]string
		want string
	}{
		{"scheme", "cluster:\n  redis_url: http://:pw@127.0.0.1:6379\n", nil,
			`config $FILE: cluster.redis_url: "http://127.0.0.1:6379": the scheme must be redis:// or rediss:// (TLS)`},
		{"no host", "cluster:\n  redis_url: redis:///0\n", nil,
			`config $FILE: cluster.redis_url: "redis:///0" has no host; want e.g. redis://127.0.0.1:6379/0`},
		{"bad port", "cluster:\n  redis_url: redis://127.0.0.1:99999/0\n", nil,
			`config $FILE: cluster.redis_url: "redis://127.0.0.1:99999/0": port "99999" is not a number from 1 to 65535`},
		{"bad database", "cluster:\n  redis_url: redis://127.0.0.1/cache\n", nil,
			`config $FILE: cluster.redis_url: "redis://127.0.0.1/cache": the path "/cache" is not a database number such as /0`},
		{"query", "cluster:\n  redis_url: redis://127.0.0.1/0?dial_timeout=3s\n", nil,
			`config $FILE: cluster.redis_url: "redis://127.0.0.1/0": query parameters (dial_timeout) are not supported (relayq sets its own short timeouts)`},
		{"query with a password", "cluster:\n  redis_url: redis://127.0.0.1/0?password=pw\n", nil,
			`config $FILE: cluster.redis_url: "redis://127.0.0.1/0": query parameters (password) are not supported (relayq sets its own short timeouts)`},
		{"password file without url", "cluster:\n  redis_password_file: " + pass + "\n", nil,
			`config $FILE: cluster.redis_password_file: set, but cluster.redis_url is empty`},
		{"two passwords", "cluster:\n  redis_url: redis://:pw@127.0.0.1/0\n  redis_password_file: " + pass + "\n", nil,
			`config $FILE: cluster.redis_password_file: set, but cluster.redis_url carries a password too; keep one`},
		{"missing password file", "cluster:\n  redis_url: redis://127.0.0.1/0\n  redis_password_file: " + missing + "\n", nil,
			`config $FILE: cluster.redis_password_file: open ` + missing + `: no such file or directory`},
		{"empty password file", "cluster:\n  redis_url: redis://127.0.0.1/0\n  redis_password_file: " + empty + "\n", nil,
			`config $FILE: cluster.redis_password_file: ` + empty + ` is empty`},
		{"node name", "cluster:\n  node_name: relay a\n", nil,
			`config $FILE: cluster.node_name: "relay a" is not a node name (1 to 128 letters, digits, '.', '-' and '_')`},
		{"expected nodes", "cluster:\n  expected_nodes: 0\n", nil,
			`config $FILE: cluster.expected_nodes: 0 must be at least 1`},
		{"adopt without redis", "cluster:\n  adopt: [\"/vol/*/queue.db\"]\n", nil,
			`config $FILE: cluster.adopt: set, but cluster.redis_url is empty: queue owner leases live in Redis`},
		{"adopt pattern", "cluster:\n  redis_url: redis://127.0.0.1/0\n  adopt: [\"/vol/[a/queue.db\"]\n", nil,
			`config $FILE: cluster.adopt: "/vol/[a/queue.db" is not a file pattern (glob) such as /var/lib/relayq/volumes/*/queue.db`},
		{"drain without an address", "cluster:\n  drain_on_stop: true\n", nil,
			`config $FILE: cluster.drain_to: empty, but cluster.drain_on_stop is true: give the peers' SMTP address (the load balancer's), HOST:PORT`},
		{"drain address", "cluster:\n  drain_on_stop: true\n  drain_to: lb.internal\n", nil,
			`config $FILE: cluster.drain_to: "lb.internal" is not HOST:PORT`},
		{"adopt after", "cluster:\n  redis_url: redis://127.0.0.1/0\n  adopt_after: 100ms\n", nil,
			`config $FILE: cluster.adopt_after: 100ms must be at least 1s (a queue's lease must lapse that long before a peer takes it)`},
		{"environment", "", map[string]string{"RELAYQ_CLUSTER_EXPECTED_NODES": "many"},
			`environment RELAYQ_CLUSTER_EXPECTED_NODES: "many" is not a whole number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, path, err := loadWith(t, tt.file, tt.env)
			if err == nil {
				t.Fatalf("Load succeeded with %+v; want an error", c.Cluster)
			}
			want := strings.ReplaceAll(tt.want, "$FILE", path)
			if err.Error() != want {
				t.Errorf("error\n got: %s\nwant: %s", err, want)
			}
			if strings.Contains(err.Error(), "pw") {
				t.Errorf("the error shows the password: %s", err)
			}
		})
	}
}
