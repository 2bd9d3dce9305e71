package submission

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// Floods: many connections from one address, and a mixed attack while a
// good client from another address must still be served.

func TestConnectionFloodFromOneIP(t *testing.T) {
	const perIP = 5
	env := startServer(t, func(o *Options) { o.MaxConnsPerIP = perIP })
	const flood = 60
	var held []*rawConn
	greeted, refused := 0, 0
	for i := 0; i < flood; i++ {
		c, err := dialFrom(t, "127.0.0.2", env.addr)
		if err != nil {
			t.Skipf("cannot bind 127.0.0.2: %v", err)
		}
		switch l := c.reply(); {
		case strings.HasPrefix(l, "220"):
			greeted++
			held = append(held, c)
		case strings.HasPrefix(l, "421 4.7.0"):
			refused++
			if ok, _ := closedWithin(c.c, 5*time.Second); !ok {
				t.Fatal("connection over the limit not closed after 421")
			}
		default:
			t.Fatalf("connection %d: %q", i, l)
		}
	}
	if greeted != perIP || refused != flood-perIP {
		t.Fatalf("%d greeted, %d refused with 421; want %d and %d", greeted, refused, perIP, flood-perIP)
	}
	// Another address is not affected by the flood.
	c := dial(t, env.addr)
	if _, err := send(c, "a@example.org", []string{"b@example.net"}, msg); err != nil {
		t.Fatalf("client from another address during the flood: %v", err)
	}
	// Closing a connection gives its slot back.
	held[0].cmd("QUIT", "221")
	held[0].c.Close()
	ok := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !ok; {
		c, err := dialFrom(t, "127.0.0.2", env.addr)
		if err != nil {
			t.Fatal(err)
		}
		ok = strings.HasPrefix(c.reply(), "220")
		c.c.Close()
	}
	if !ok {
		t.Fatal("slot not released after QUIT")
	}
}

// TestGoodClientServedDuringAttack runs a mixed attack from 127.0.0.2 (a
// connection flood, idle connections holding slots, pipelined junk and a
// recipient flood) and checks that a well-behaved client on 127.0.0.1 gets
// its 250 while the attack is going on: it is neither refused for want of a
// slot nor left waiting behind the attackers' connections. The bound only
// tells a client that waits for ever from one a busy machine slows: the
// attack never ends by itself, so a starved client would never be served.
func TestGoodClientServedDuringAttack(t *testing.T) {
	env := startServer(t, func(o *Options) {
		o.MaxConnsPerIP = 10
		o.MaxConnections = 50
		o.ReadTimeout = time.Second
	})
	if c, err := dialFrom(t, "127.0.0.2", env.addr); err != nil {
		t.Skipf("cannot bind 127.0.0.2: %v", err)
	} else {
		c.c.Close()
	}
	a := &attackers{stop: make(chan struct{})}
	defer a.end()
	// Floods of connections that open and drop at once.
	for i := 0; i < 4; i++ {
		a.run(func() { dropConnection(env.addr) })
	}
	// Slots held by idle connections, and junk plus recipient floods.
	for i := 0; i < 6; i++ {
		rcpts := i%2 == 0
		a.run(func() { floodAndHold(env.addr, rcpts, a.stop) })
	}
	const bound = 60 * time.Second
	for i := 0; i < 5; i++ {
		start := time.Now()
		if err := goodClientWithin(env.addr, bound); err != nil {
			t.Fatalf("good client during the attack: %v", err)
		}
		t.Logf("good client %d served in %v", i, time.Since(start).Round(time.Millisecond))
	}
}

// attackers run attacks in a loop from goroutines until end.
type attackers struct {
	stop chan struct{}
	wg   sync.WaitGroup
}

// run repeats f until end is called.
func (a *attackers) run(f func()) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for {
			select {
			case <-a.stop:
				return
			default:
			}
			f()
		}
	}()
}

// end stops the attacks and waits for them.
func (a *attackers) end() { close(a.stop); a.wg.Wait() }

// attackerDialer dials from 127.0.0.2, the attacker's address.
func attackerDialer() *net.Dialer {
	return &net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
}

// dropConnection opens a connection and drops it at once.
func dropConnection(addr string) {
	if c, err := attackerDialer().Dial("tcp", addr); err == nil {
		c.Close()
	}
}

// floodAndHold sends a session of 2,000 RCPTs (rcpts) or junk NOOPs in one
// write, then holds the connection idle for up to 2 s (or until stop).
func floodAndHold(addr string, rcpts bool, stop <-chan struct{}) {
	c, err := attackerDialer().Dial("tcp", addr)
	if err != nil {
		return
	}
	defer c.Close()
	var junk strings.Builder
	junk.WriteString("EHLO attacker\r\nMAIL FROM:<x@example.org>\r\n")
	for j := 0; j < 2000; j++ {
		if rcpts {
			fmt.Fprintf(&junk, "RCPT TO:<r%d@example.net>\r\n", j)
		} else {
			junk.WriteString("NOOP junk junk junk\r\n")
		}
	}
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	go io.Copy(io.Discard, c)
	_, _ = io.WriteString(c, junk.String())
	// Hold the connection without sending anything more.
	select {
	case <-stop:
	case <-time.After(2 * time.Second):
	}
}

// goodClientWithin sends one message from 127.0.0.1 and fails unless it
// is accepted within bound.
func goodClientWithin(addr string, bound time.Duration) error {
	done := make(chan error, 1)
	go func() {
		c, err := smtp.Dial(addr)
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		if err := c.Hello("good.test"); err != nil {
			done <- err
			return
		}
		_, err = send(c, "a@example.org", []string{"b@example.net"}, msg)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(bound):
		return fmt.Errorf("not served within %v", bound)
	}
}
