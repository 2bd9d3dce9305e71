package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

// hookCounter is the receiver of `relaybench webhook-sink`: it answers
// every POST with 200, as a webhook consumer that keeps up does, and
// counts the batches and the events in them (the relay posts
// {"events":[...]}, docs/events.md).
type hookCounter struct {
	batches, events atomic.Int64
	// out, if set, gets "batches N events M" after every batch, so a
	// script can tell when the relay has caught up.
	out io.Writer
	mu  sync.Mutex
}

func (h *hookCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, "read: "+err.Error(), http.StatusBadRequest)
		return
	}
	var batch struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(body, &batch); err != nil {
		http.Error(w, "not an events batch", http.StatusBadRequest)
		return
	}
	h.batches.Add(1)
	h.events.Add(int64(len(batch.Events)))
	if h.out != nil {
		h.mu.Lock()
		fmt.Fprintln(h.out, h.summary())
		h.mu.Unlock()
	}
	w.WriteHeader(http.StatusOK)
}

func (h *hookCounter) summary() string {
	return fmt.Sprintf("batches %d events %d", h.batches.Load(), h.events.Load())
}

// runWebhookSink is `relaybench webhook-sink [--listen 127.0.0.1:0]`, the
// receiver alone, for bench/compare-postfix.sh: it prints its URL, runs
// until SIGTERM or SIGINT, printing "batches N events M" after each batch
// and once more at the end.
func runWebhookSink(args []string) error {
	fs := flag.NewFlagSet("relaybench webhook-sink", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "loopback host:port to listen on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !isLoopback(*listen) {
		return errors.New("webhook-sink: --listen must be a loopback address")
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("webhook-sink: %w", err)
	}
	h := &hookCounter{out: os.Stdout}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	fmt.Printf("http://%s/hook\n", l.Addr())
	<-sigs
	srv.Close()
	fmt.Println(h.summary())
	return nil
}
