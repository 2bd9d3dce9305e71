package e2e

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// stepMode is how a stepServer falls out of step with its client.
type stepMode int

const (
	// extraAfterDot answers the first final dot of each connection with
	// one reply too many.
	extraAfterDot stepMode = iota
	// dataIs250 answers DATA with 250 instead of 354, and so never takes
	// a body.
	dataIs250
	// earlyAccept sends a 250 together with its 354, before any content,
	// and then refuses the content with 451: it takes no body.
	earlyAccept
)

// stepServer is a next hop that falls out of step with its client, in one
// of the ways seen in the field (stepMode). It records the tokens of the
// bodies it took, in order.
type stepServer struct {
	l          net.Listener
	mode       stepMode
	pipelining bool

	mu   sync.Mutex
	took []string
}

func newStepServer(t *testing.T, mode stepMode, pipelining bool) *stepServer {
	t.Helper()
	s := &stepServer{mode: mode, pipelining: pipelining}
	s.l = acceptEach(t, func(c net.Conn) { go s.serve(c) })
	return s
}

func (s *stepServer) tokens() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[string]int{}
	for _, tok := range s.took {
		n[tok]++
	}
	return n
}

func (s *stepServer) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	say := func(l string) { w.WriteString(l + "\r\n") }
	say("220 step.test ready")
	w.Flush()
	extraDue := true
	eachCommand(c, r, func(cmd string) bool {
		switch {
		case strings.HasPrefix(cmd, "EHLO"):
			if s.pipelining {
				say("250-step.test")
				say("250 PIPELINING")
			} else {
				say("250 step.test")
			}
		case cmd == "DATA" && s.mode == dataIs250:
			say("250 2.0.0 ok") // no 354: the body is never asked for
		case cmd == "DATA" && s.mode == earlyAccept:
			say("354 go")
			say("250 2.0.0 accepted before body")
			w.Flush() // with the replies before, when pipelined
			if _, ok := readBody(r); !ok {
				return false
			}
			say("451 4.3.0 body refused")
		case cmd == "DATA":
			say("354 go ahead")
			w.Flush()
			body, ok := readBody(r)
			if !ok {
				return false
			}
			s.mu.Lock()
			s.took = append(s.took, tokenOf(body))
			s.mu.Unlock()
			say("250 2.0.0 taken")
			if extraDue && s.mode == extraAfterDot {
				w.Flush()
				say("250 2.0.0 and one more")
				extraDue = false
			}
		case cmd == "QUIT":
			say("221 bye")
			w.Flush()
			return false
		default:
			say("250 ok")
		}
		// Pipelined commands are answered as they are read, but sent
		// only when no more are waiting (RFC 2920 section 3.2).
		if r.Buffered() == 0 {
			w.Flush()
		}
		return true
	})
}

// acceptEach listens on a new loopback port until the test ends and hands
// every connection it accepts to accept, in the order they come.
func acceptEach(t *testing.T, accept func(net.Conn)) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accept(c)
		}
	}()
	return l
}

// eachCommand reads SMTP commands from r, giving each 30 s to arrive, and
// hands each, trimmed and upper-cased, to handle until handle returns
// false or the connection fails.
func eachCommand(c net.Conn, r *bufio.Reader, handle func(cmd string) bool) {
	for {
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		line, err := r.ReadString('\n')
		if err != nil || !handle(strings.ToUpper(strings.TrimSpace(line))) {
			return
		}
	}
}

// readBody reads DATA content up to the final dot, undoing dot-stuffing.
func readBody(r *bufio.Reader) ([]byte, bool) {
	var b strings.Builder
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return nil, false
		}
		if l == ".\r\n" {
			return []byte(strings.ReplaceAll(b.String(), "\r\n.", "\r\n")), true
		}
		b.WriteString(l)
	}
}

// submitTokens queues one message per token through r and returns the
// queue IDs by token.
func submitTokens(t *testing.T, r *relay, toks []string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	c, err := dialClient(r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for _, tok := range toks {
		o, line, err := c.send("app@example.org", "rcpt@example.net", testMessage(tok), nil)
		if o != accepted {
			t.Fatalf("submission of %s: %s %q %v", tok, o, line, err)
		}
		ids[tok] = line[strings.LastIndex(line, " ")+1:]
	}
	return ids
}

// A next hop that took no body must never have it recorded as delivered:
// one that answers DATA with 250 never asked for it, and one that sends a
// 250 together with its 354 (or behind it, all of a pipelined group's
// replies at once) gave that 250 before it saw any content, which it then
// refuses. Every attempt is deferred with 4.5.0, none delivered.
func TestNoBodyTakenIsNeverDelivered(t *testing.T) {
	for _, mode := range []struct {
		name string
		mode stepMode
	}{{"data=250", dataIs250}, {"250 with 354", earlyAccept}} {
		for _, pipelining := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/pipelining=%v", mode.name, pipelining), func(t *testing.T) {
				noBodyNeverDelivered(t, newStepServer(t, mode.mode, pipelining))
			})
		}
	}
}

func noBodyNeverDelivered(t *testing.T, mx *stepServer) {
	r := startRelay(t, mx.l.Addr().String(), withAdminAPI())
	adminURL := r.adminURL
	toks := []string{"tok-nobody-0", "tok-nobody-1", "tok-nobody-2"}
	ids := submitTokens(t, r, toks)
	// Two deferrals each: the first attempt, and a retry.
	evs := readEvents(t, strings.TrimPrefix(adminURL, "http://"), func(evs []streamEvent) bool {
		n := map[string]int{}
		for _, e := range evs {
			switch e.Type {
			case "deferred":
				n[e.QueueID]++
			case "delivered":
				return true // wrong, and said below
			}
		}
		for _, id := range ids {
			if n[id] < 2 {
				return false
			}
		}
		return true
	})
	for _, e := range evs {
		if e.Type == "delivered" {
			t.Errorf("%s recorded as delivered, but the next hop took no body", e.QueueID)
		}
	}
	if got := mx.tokens(); len(got) != 0 {
		t.Errorf("the next hop took bodies %v, though it never took one", got)
	}
	if r.log.count("4.5.0") == 0 {
		t.Errorf("no deferral says 4.5.0 (a reply out of step)")
	}
}

// A next hop that sends one reply too many after a final dot would shift
// every later reply on a reused connection: each message recorded as
// delivered must be one whose body it took, and all of them get there.
func TestExtraReplyAfterDotDeliversNothingFalsely(t *testing.T) {
	for _, pipelining := range []bool{false, true} {
		t.Run(fmt.Sprintf("pipelining=%v", pipelining), func(t *testing.T) {
			mx := newStepServer(t, extraAfterDot, pipelining)
			r := startRelay(t, mx.l.Addr().String(), withAdminAPI())
			adminURL := r.adminURL
			var toks []string
			for i := range 8 {
				toks = append(toks, fmt.Sprintf("tok-extra-%d", i))
			}
			ids := submitTokens(t, r, toks)
			evs := readEvents(t, strings.TrimPrefix(adminURL, "http://"), func(evs []streamEvent) bool {
				n := 0
				for _, e := range evs {
					if e.Type == "delivered" {
						n++
					}
				}
				return n >= len(toks)
			})
			took := mx.tokens()
			delivered := map[string]bool{}
			for _, e := range evs {
				if e.Type == "delivered" {
					delivered[e.QueueID] = true
				}
			}
			for _, tok := range toks {
				if delivered[ids[tok]] && took[tok] == 0 {
					t.Errorf("%s (%s) recorded as delivered, but the next hop never took it", tok, ids[tok])
				}
			}
		})
	}
}
