package main

import (
	"bytes"
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
func runHTTPLoad(ctx context.Context, spec loadSpec, res *loadResult) {
	if err := waitListening(ctx, spec.Addr, 15*time.Second); err != nil {
		res.fail(err)
		return
	}
	url := "http://" + spec.Addr + "/api/v1/messages"
	tr := &http.Transport{MaxIdleConns: spec.Sessions, MaxIdleConnsPerHost: spec.Sessions, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	body := bodyFor(spec.Size)
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < spec.Sessions; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				seq := int(next.Add(1) - 1)
				if seq >= spec.Count {
					return
				}
				if err := postOne(ctx, client, url, spec, seq, body, res); err != nil {
					res.fail(fmt.Errorf("message %d: %w", seq, err))
				}
			}
		}()
	}
	wg.Wait()
}

// postOne submits one message; its whole request is the "end of message",
// so the 250 latency and the transaction are the same span here.
func postOne(ctx context.Context, c *http.Client, url string, spec loadSpec, seq int, body []byte, res *loadResult) error {
	now := time.Now()
	msg := append(messageHead(tag{Run: spec.Run, Seq: seq, Sent: now}, spec.From, spec.To), body...)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(msg))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "message/rfc822")
	res.start[seq] = now.Sub(spec.Base)
	res.dot[seq] = res.start[seq]
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body) // read to the end so the connection is reused
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("status %s", resp.Status)
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
