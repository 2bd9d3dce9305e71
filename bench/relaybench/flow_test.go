package main

import (
	"context"
	"testing"
	"time"
)

// TestDirectFlow runs the load generator into the sink over loopback and
// checks that every message is matched and the rates are consistent.
func TestDirectFlow(t *testing.T) {
	o := &options{timeout: 30 * time.Second}
	res, err := runFlow(context.Background(), o, flowSpec{Name: "t", Mode: direct, Sessions: 4, Count: 200, Size: 2048})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 200 || res.Failed != 0 || res.Delivered != 200 || res.TimedOut {
		t.Fatalf("ok %d failed %d delivered %d timed out %v (first error %v)", res.OK, res.Failed, res.Delivered, res.TimedOut, res.FirstErr)
	}
	if res.E2E <= 0 || res.Accepted < res.E2E*0.5 {
		t.Fatalf("accepted %.0f/s, e2e %.0f/s", res.Accepted, res.E2E)
	}
	if res.Lat250.N != 200 || res.S2D.N != 200 || res.Lat250.P50 <= 0 {
		t.Fatalf("latencies: 250 %+v, s2d %+v", res.Lat250, res.S2D)
	}
	// The 250 wait is the last part of each transaction.
	if res.Txn.N != 200 || res.Txn.Max < res.Lat250.Max || res.Txn.P50 < res.Lat250.P50 {
		t.Fatalf("latencies: 250 %+v, txn %+v", res.Lat250, res.Txn)
	}
}

// TestSinkIgnoresForeignMessages checks that a message from another run, or
// without a tag, does not count towards this run.
func TestSinkIgnoresForeignMessages(t *testing.T) {
	base := time.Now()
	sk, err := startSink("127.0.0.1:0", "mine", base, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	lr := newLoadResult(2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	runLoad(ctx, loadSpec{Addr: sk.Addr(), Sessions: 1, Count: 2, Size: 1024, Run: "other", Base: base, From: "a@b.test", To: "c@d.test"}, lr)
	if lr.sent.Load() != 2 {
		t.Fatalf("sent %d, first error %v", lr.sent.Load(), lr.firstError())
	}
	if sk.count.Load() != 0 || sk.foreign.Load() != 2 {
		t.Fatalf("count %d foreign %d, want 0 and 2", sk.count.Load(), sk.foreign.Load())
	}
	runLoad(ctx, loadSpec{Addr: sk.Addr(), Sessions: 2, Count: 2, Size: 1024, Run: "mine", Base: base, From: "a@b.test", To: "c@d.test"}, newLoadResult(2))
	select {
	case <-sk.Done():
	case <-ctx.Done():
		t.Fatal("sink never saw both messages of its own run")
	}
}
