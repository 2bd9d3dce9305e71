package cluster

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
)

// gateProxy forwards TCP to Redis, except that it holds back the first
// request naming marker until release is closed, and closes arrived when
// it has one: a Redis that is slow for one call, for exactly as long as
// the test wants.
type gateProxy struct {
	l       net.Listener
	target  string
	marker  []byte
	arrived chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGateProxy(t *testing.T, r *redisServer, marker string) *gateProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gateProxy{l: l, target: fmt.Sprintf("127.0.0.1:%d", r.port), marker: []byte(marker),
		arrived: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { l.Close(); g.open() })
	go g.serve()
	return g
}

func (g *gateProxy) url() string { return "redis://" + g.l.Addr().String() + "/0" }

// open lets the held request through (idempotent).
func (g *gateProxy) open() {
	select {
	case <-g.release:
	default:
		close(g.release)
	}
}

func (g *gateProxy) serve() {
	for {
		c, err := g.l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", g.target)
		if err != nil {
			c.Close()
			continue
		}
		go func() { io.Copy(c, up); c.Close() }()
		go g.forward(c, up)
	}
}

// forward copies client bytes to Redis, waiting at the first chunk that
// holds the marker.
func (g *gateProxy) forward(c, up net.Conn) {
	defer up.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if bytes.Contains(buf[:n], g.marker) {
				g.once.Do(func() { close(g.arrived) })
				<-g.release
			}
			if _, werr := up.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// While one scope's learned-rate write waits on a slow Redis, the node
// still answers Pace for every scope from its view, so Admit (which reads
// it on every attempt) is never held up by Redis; once Redis answers, the
// write is in the view.
func TestSlowRedisWriteDoesNotHoldUpPaceReads(t *testing.T) {
	r := startRedis(t)
	g := newGateProxy(t, r, "slow.example")
	n, _ := newNode(t, r, "a", func(c *Config) { c.RedisURL = g.url(); c.Timeout = time.Minute })
	quick := shaping.Pace{Scope: shaping.Scope{Kind: shaping.ScopeDomain, Name: "quick.example"}, Interval: time.Second, Since: time.Unix(1e9, 0)}
	if !n.SwapPace(quick.Scope.String(), nil, quick) {
		t.Fatal("first write of quick.example refused")
	}
	slow := shaping.Pace{Scope: shaping.Scope{Kind: shaping.ScopeDomain, Name: "slow.example"}, Interval: 2 * time.Second, Since: time.Unix(1e9, 0)}
	swapped := make(chan bool, 1)
	go func() { swapped <- n.SwapPace(slow.Scope.String(), nil, slow) }()
	select {
	case <-g.arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the write of slow.example never reached Redis")
	}
	read := make(chan shaping.Pace, 1)
	go func() { p, _ := n.Pace(quick.Scope.String()); read <- p }()
	select {
	case p := <-read:
		if !p.Same(quick) {
			t.Errorf("Pace(quick.example) = %+v while Redis was slow, want %+v", p, quick)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Pace waited for another scope's write to Redis")
	}
	g.open()
	select {
	case ok := <-swapped:
		if !ok {
			t.Fatal("the write of slow.example was refused")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write of slow.example did not finish after Redis answered")
	}
	if p, ok := n.Pace(slow.Scope.String()); !ok || !p.Same(slow) {
		t.Errorf("after the write, Pace(slow.example) = %+v, %v", p, ok)
	}
}
