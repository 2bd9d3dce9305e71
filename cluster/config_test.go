package cluster

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/internal/waitfor"
)

// The password comes from the file; a wrong one is an outage, not a crash.
func TestPasswordFile(t *testing.T) {
	r := startRedis(t, "--requirepass", "file-s3cret")
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	bad := filepath.Join(dir, "bad")
	os.WriteFile(good, []byte("file-s3cret\n"), 0o600)
	os.WriteFile(bad, []byte("wrong"), 0o600)
	n, _ := newNode(t, r, "a", func(c *Config) { c.PasswordFile = good })
	acquire(t, n, []shaping.Slot{{Key: "domain:x", Max: 1}}, "a connection through an authenticated Redis")
	logs := &logBuf{}
	m, err := New(Config{RedisURL: r.url(), PasswordFile: bad, NodeName: "b"}, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.RedisUp() || !strings.Contains(logs.String(), "Redis unreachable") {
		t.Errorf("a wrong password: up %v, log %s", m.RedisUp(), logs)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte(" \n"), 0o600)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{RedisURL: "http://:pw@x:1/0", NodeName: "a"}, `redis URL "http://x:1/0": want redis://`},
		// url.Parse quotes the whole text it refuses, password and all.
		{Config{RedisURL: "redis://:pw@bad host:1/0", NodeName: "a"}, `redis URL "redis://bad host:1/0"`},
		{Config{RedisURL: "redis://:pw@x:1/0", PasswordFile: empty, NodeName: "a"}, "carries a password and a password file"},
		{Config{RedisURL: "redis://x:1/0", PasswordFile: empty, NodeName: "a"}, "is empty"},
		{Config{RedisURL: "redis://x:1/0", NodeName: "a b"}, `node name "a b"`},
	} {
		_, err := New(c.cfg, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "pw") {
			t.Errorf("New(%+v) = %v; want an error with %q", c.cfg, err, c.want)
		}
	}
}

// A node started while Redis is unreachable shapes with its share of the
// limits at once, and never waits on Redis.
func TestStartWithoutRedis(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	logs := &logBuf{}
	n, err := New(Config{RedisURL: "redis://" + addr + "/0", NodeName: "lonely", ExpectedNodes: 4}, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.RedisUp() {
		t.Fatal("up without Redis")
	}
	slots := []shaping.Slot{{Key: "provider:google", Max: 8}}
	acquire(t, n, slots, "connection 1 of a share of 2")
	acquire(t, n, slots, "connection 2 of a share of 2")
	if ok, _ := n.Acquire(slots); ok {
		t.Error("a third connection: more than 8/4")
	}
	if n := logs.count("Redis unreachable"); n != 1 {
		t.Errorf("logged %d times; want once:\n%s", n, logs)
	}
}

// A Redis that stops answering (the process frozen) costs each node one
// call's timeout, then local limits; when it answers again the limits are
// shared again.
func TestFrozenRedisTimesOut(t *testing.T) {
	r := startRedis(t)
	n, _ := newNode(t, r, "a", func(c *Config) { c.ExpectedNodes = 2 })
	b := []shaping.Bucket{{Key: "domain:slow.example", Interval: time.Second}}
	if err := r.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer r.cmd.Process.Signal(syscall.SIGCONT)
	began := time.Now()
	ok, _, _ := n.Take(start, b)
	took := time.Since(began)
	if !ok || n.RedisUp() {
		t.Fatalf("frozen Redis: Take = %v, up %v", ok, n.RedisUp())
	}
	t.Logf("the call to the frozen Redis gave up after %v (timeout %v)", took.Round(time.Millisecond), DefaultTimeout)
	began = time.Now()
	if ok, _, _ := n.Take(start.Add(time.Second), b); ok {
		t.Error("local limit: a second token 1s later at 1/s over 2 nodes")
	}
	if d := time.Since(began); d > DefaultTimeout {
		t.Errorf("a call while Redis is down took %v: it waited on Redis", d)
	}
	r.cmd.Process.Signal(syscall.SIGCONT)
	if !waitfor.Within(5*time.Second, n.RedisUp) {
		t.Fatal("Redis answers again, the node does not use it")
	}
}
