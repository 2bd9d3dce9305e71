package delivery

import (
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
)

// The attempts under way are listed by destination while a next hop keeps
// them waiting, for the operator's destinations page, and leave the list
// when they end.
func TestInFlightListsAttemptsUnderWay(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var held []net.Conn
	accepted := make(chan struct{}, 1)
	go func() { // accepts and never answers, until the test hangs up
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			accepted <- struct{}{}
		}
	}()
	clk := clock.NewFake(t0)
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: time.Hour}
	r := newRigWith(t, clk, ln.Addr().String(), dialer, nil)
	if got := r.eng.InFlight(); len(got) != 0 {
		t.Fatalf("in flight before any mail: %+v", got)
	}
	r.submit("app@example.org", "a@slow.test")
	want := []InFlight{{Destination: r.opts.Router.Destination("slow.test"), Attempts: 1}}
	select {
	case <-accepted: // the attempt is under way: it has connected
	case <-time.After(5 * time.Second):
		t.Fatal("the attempt never connected")
	}
	if got := r.eng.InFlight(); !slices.Equal(got, want) {
		t.Fatalf("in flight while the next hop is silent: %+v, want %+v", got, want)
	}
	mu.Lock()
	for _, c := range held {
		c.Close()
	}
	mu.Unlock()
	if s := r.outcome(); s != "deferred" {
		t.Fatalf("attempt ended %s, want deferred", s)
	}
	r.waitScheduler(5*time.Second, func() bool { return len(r.eng.InFlight()) == 0 })
}
