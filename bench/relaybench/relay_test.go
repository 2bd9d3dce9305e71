package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/internal/dkim"
)

// The configuration relaybench writes loads in relayq, with the DKIM key
// for the load's From: domain when --dkim-key is given.
func TestRelayConfigLoads(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "bench.pem")
	k, err := dkim.GenerateKey(dkim.KeyEd25519, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := dkim.WriteKeyFile(key, k); err != nil {
		t.Fatal(err)
	}
	for _, dk := range []string{"", key} {
		cfg := relayConfig{Listen: "127.0.0.1:0", QueuePath: filepath.Join(dir, "q.db"), NextHop: "127.0.0.1:25", InitialDelay: "1s", MaxDelay: "2s", DKIMKey: dk}
		path := filepath.Join(dir, "relayq.yaml")
		if err := os.WriteFile(path, []byte(cfg.yaml()), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := config.Load(path)
		if err != nil {
			t.Fatalf("dkim key %q: %v", dk, err)
		}
		if want := dk != ""; (len(c.DKIM.Keys) == 1 && c.DKIM.Keys[0].Domain == benchFromDomain) != want {
			t.Fatalf("dkim key %q: keys %+v", dk, c.DKIM.Keys)
		}
	}
	cfg := relayConfig{Listen: "127.0.0.1:0", QueuePath: filepath.Join(dir, "q.db"), NextHop: "127.0.0.1:25", InitialDelay: "1s", MaxDelay: "2s", Webhook: "http://127.0.0.1:9/hook"}
	path := filepath.Join(dir, "relayq.yaml")
	if err := os.WriteFile(path, []byte(cfg.yaml()), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil || len(c.Events.Webhooks) != 1 || c.Events.Webhooks[0].URL != cfg.Webhook {
		t.Fatalf("--events config: %+v, %v", c.Events, err)
	}
}

// With --redis and --shaping-rate the relay's configuration shares its
// shaping state through that Redis, with a rate for every destination.
func TestRelayConfigCluster(t *testing.T) {
	dir := t.TempDir()
	cfg := relayConfig{Listen: "127.0.0.1:0", QueuePath: filepath.Join(dir, "q.db"), NextHop: "127.0.0.1:25", InitialDelay: "1s", MaxDelay: "2s",
		RedisURL: "redis://127.0.0.1:6390/0", ShapingRate: "1000000/s"}
	path := filepath.Join(dir, "relayq.yaml")
	if err := os.WriteFile(path, []byte(cfg.yaml()), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster.RedisURL != cfg.RedisURL || c.Shaping.Defaults.MaxMessageRate.N != 1000000 {
		t.Fatalf("cluster %+v, shaping defaults %+v", c.Cluster, c.Shaping.Defaults)
	}
}
