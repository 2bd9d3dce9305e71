package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Scenario h: the HTTP submission API under the load of scenario c (20
// clients, 1 KiB, next hop down): keep-alive clients POST raw messages to
// /api/v1/messages, and each 202 counts as SMTP's 250 does.

// runHTTPLoad posts spec.Count messages from spec.Sessions clients, each
// keeping its connection alive, filling res like runLoad. spec.Addr is the
// API's host:port.
//
// Each client is one goroutine writing HTTP/1.1 requests on its own
// connection and reading the answers with http.ReadResponse, as the SMTP
// load's go-smtp client is one goroutine per session. net/http's Transport
// costs about the same CPU per message but hands every request between
// three goroutines (caller, write loop, read loop): on the two shared
// cores that scheduling, not the relay, set the pace of scenario h.
func runHTTPLoad(ctx context.Context, spec loadSpec, res *loadResult) {
	if err := waitListening(ctx, spec.Addr, 15*time.Second); err != nil {
		res.fail(err)
		return
	}
	body := bodyFor(spec.Size)
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < spec.Sessions; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &httpConn{addr: spec.Addr, query: spec.Query}
			defer c.close()
			stop := context.AfterFunc(ctx, c.close) // unblocks I/O when the run times out
			defer stop()
			for ctx.Err() == nil {
				seq := int(next.Add(1) - 1)
				if seq >= spec.Count {
					return
				}
				if err := postOne(c, spec, seq, body, res); err != nil {
					res.fail(fmt.Errorf("message %d: %w", seq, err))
					c.close()
				}
			}
		}()
	}
	wg.Wait()
}

// httpConn is one keep-alive client connection, dialled on first use and
// again after an error.
type httpConn struct {
	addr  string
	query string
	mu    sync.Mutex
	conn  net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
}

func (c *httpConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// roundTrip sends one POST of msg and returns the status code, having
// read the whole answer so the connection can carry the next one.
func (c *httpConn) roundTrip(msg []byte) (int, error) {
	c.mu.Lock()
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, 10*time.Second)
		if err != nil {
			c.mu.Unlock()
			return 0, fmt.Errorf("dial %s: %w", c.addr, err)
		}
		c.conn, c.br, c.bw = conn, bufio.NewReader(conn), bufio.NewWriter(conn)
	}
	conn, br, bw := c.conn, c.br, c.bw
	c.mu.Unlock()
	conn.SetDeadline(time.Now().Add(2 * time.Minute))
	fmt.Fprintf(bw, "POST /api/v1/messages%s HTTP/1.1\r\nHost: %s\r\nContent-Type: message/rfc822\r\nContent-Length: %d\r\n\r\n", c.query, c.addr, len(msg))
	bw.Write(msg)
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Close {
		c.close() // the next message dials again
	}
	return resp.StatusCode, err
}

// postOne submits one message; its whole request is the "end of message",
// so the 250 latency and the transaction are the same span here.
func postOne(c *httpConn, spec loadSpec, seq int, body []byte, res *loadResult) error {
	now := time.Now()
	msg := append(messageHead(tag{Run: spec.Run, Seq: seq, Sent: now}, spec.From, spec.To), body...)
	res.start[seq] = now.Sub(spec.Base)
	res.dot[seq] = res.start[seq]
	status, err := c.roundTrip(msg)
	if err != nil {
		return err
	}
	if status != http.StatusAccepted {
		return fmt.Errorf("status %d", status)
	}
	res.done[seq] = time.Since(spec.Base)
	res.ok[seq] = true
	res.sent.Add(1)
	return nil
}

// waitListening polls addr until it accepts a connection: the relay opens
// its HTTP listener just after the SMTP one that startRelay waited for.
func waitListening(ctx context.Context, addr string, within time.Duration) error {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("HTTP API %s not listening after %v: %w", addr, within, err)
		case <-tick.C:
		}
	}
}
