package smtpclient

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/relayq/relayq/smtpcodes"
	"github.com/relayq/relayq/smtptest"
)

// tarpit accepts connections and never says anything.
func tarpit(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return ln.Addr().String()
}

// A server that accepts the connection and never greets ends the attempt
// after GreetingTimeout, well before the command timeout, as a transient
// failure; the next hop is then tried.
func TestGreetingTimeoutEndsSilentServer(t *testing.T) {
	good := smtptest.NewServer(t)
	d := &Dialer{Hostname: "relay.test", TLS: TLSNone, ConnectTimeout: 5 * time.Second, CommandTimeout: time.Hour, GreetingTimeout: 100 * time.Millisecond}
	done := make(chan []RcptResult, 1)
	go func() {
		done <- d.Deliver(context.Background(), []Hop{hopTo(t, tarpit(t)), hopTo(t, good.Addr())}, envelope("bob@example.net"), bodyOf(testBody))
	}()
	select {
	case res := <-done:
		if res[0].Reply.Class != smtpcodes.Success {
			t.Fatalf("after the silent hop: %v", res[0].Reply)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the attempt waited for a greeting that never came")
	}
	// Alone, the silent hop is a transient failure.
	res := d.Deliver(context.Background(), []Hop{hopTo(t, tarpit(t))}, envelope("bob@example.net"), bodyOf(testBody))
	if r := res[0].Reply; r.Class != smtpcodes.Transient {
		t.Fatalf("silent server: %v, want transient", r)
	}
	if got := (&Dialer{CommandTimeout: 10 * time.Second}).greetingTimeout(); got != 10*time.Second {
		t.Fatalf("greeting timeout %v above a shorter command timeout", got)
	}
	if got := (&Dialer{}).greetingTimeout(); got != DefaultGreetingTimeout {
		t.Fatalf("default greeting timeout %v", got)
	}
}
