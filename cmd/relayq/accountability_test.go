package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

// `relayq queue check --accountability` finds a recipient whose next
// attempt a claim pushed past its message's max_age (the claim's attempt
// never came), reschedules it, says so and exits 1; a second run finds
// nothing.
func TestQueueCheckAccountability(t *testing.T) {
	path, ids := storeWith(t, []byte("a\r\n"), []byte("b\r\n"))
	st, err := queue.Open(path, queue.Options{LockTimeout: 100 * time.Millisecond, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := st.Claim(ids[0], []string{"x@example.net"}, now, now.Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	st.EndAttempt(ids[0], []string{"x@example.net"})
	st.Close()

	var out bytes.Buffer
	_, err = offlineQueueCmd([]string{"check", "--accountability", "--file", path}, &out)
	if err == nil || !strings.Contains(out.String(), ids[0]+" x@example.net: "+queue.ProblemTooLate) ||
		!strings.Contains(out.String(), "2 messages checked, 1 without a future") {
		t.Fatalf("first run: %v\n%s", err, out.String())
	}
	out.Reset()
	if _, err := offlineQueueCmd([]string{"check", "--accountability", "--file", path}, &out); err != nil {
		t.Fatalf("second run: %v\n%s", err, out.String())
	}
	if _, err := offlineQueueCmd([]string{"compact", "--accountability", "--file", path}, &out); err == nil {
		t.Error("--accountability accepted by compact")
	}
}
