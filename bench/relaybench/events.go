package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
)

// eventsSink is a local webhook receiver for --events: it answers every
// batch at once ("ok") or never ("hang", the dead endpoint relayq must not
// be slowed by), and counts the events' batches it was given.
type eventsSink struct {
	srv     *http.Server
	url     string
	batches atomic.Int64
	bytes   atomic.Int64
	stop    chan struct{}
}

// startEventsSink listens on a loopback port. mode is "ok" or "hang".
func startEventsSink(mode string) (*eventsSink, error) {
	if mode != "ok" && mode != "hang" {
		return nil, fmt.Errorf("--events: %q is not ok or hang", mode)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("--events: %w", err)
	}
	s := &eventsSink{url: "http://" + l.Addr().String() + "/hook", stop: make(chan struct{})}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		s.batches.Add(1)
		s.bytes.Add(n)
		if mode == "hang" {
			select {
			case <-s.stop:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})}
	go s.srv.Serve(l)
	return s, nil
}

// Close stops the receiver and releases hanging requests.
func (s *eventsSink) Close() {
	close(s.stop)
	s.srv.Close()
}

// webhookYAML is the events section that points the relay at the sink.
func webhookYAML(url string) string {
	if url == "" {
		return ""
	}
	return fmt.Sprintf("events:\n  webhooks:\n    - {url: %q, secret: relaybench, batch: 100}\n", url)
}
