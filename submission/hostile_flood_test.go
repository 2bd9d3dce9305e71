package submission

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
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
// its 250 within a bound while the attack is going on.
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
	stop := make(chan struct{})
	var wg sync.WaitGroup
	attack := func(f func() bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !f() {
					return
				}
			}
		}()
	}
	// Floods of connections that open and drop at once.
	for i := 0; i < 4; i++ {
		attack(func() bool {
			d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
			c, err := d.Dial("tcp", env.addr)
			if err == nil {
				c.Close()
			}
			return true
		})
	}
	// Slots held by idle connections, and junk plus recipient floods.
	for i := 0; i < 6; i++ {
		i := i
		attack(func() bool {
			d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
			c, err := d.Dial("tcp", env.addr)
			if err != nil {
				return true
			}
			defer c.Close()
			var junk strings.Builder
			junk.WriteString("EHLO attacker\r\nMAIL FROM:<x@example.org>\r\n")
			for j := 0; j < 2000; j++ {
				if i%2 == 0 {
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
			return true
		})
	}
	defer func() { close(stop); wg.Wait() }()

	const bound = 3 * time.Second
	for i := 0; i < 5; i++ {
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			c, err := smtp.Dial(env.addr)
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
			if err != nil {
				t.Fatalf("good client during the attack: %v", err)
			}
		case <-time.After(bound):
			t.Fatalf("good client not served within %v during the attack", bound)
		}
		t.Logf("good client %d served in %v", i, time.Since(start).Round(time.Millisecond))
	}
}
