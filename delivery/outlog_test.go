package delivery

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/queue"
)

// written logs one line per recipient and counts each; the attempt's
// TLS-RPT result goes to the recorder once, unless the store takes it
// with the outcome (tally).
func TestOutcomeLogLinesCountsAndTLS(t *testing.T) {
	var buf bytes.Buffer
	obs := chanObserver{make(chan string, 10)}
	rec := &tlsResults{}
	l := outcomeLog{log: slog.New(slog.NewTextHandler(&buf, nil)), obs: obs, tlsrpt: rec}
	j := &job{id: "m1", env: &queue.Envelope{Created: t0}, tls: smtpclient.TLSInfo{Policy: smtpclient.PolicyDANE, Version: "TLSv1.3"}}
	outcomes := []queue.Outcome{
		{Address: "a@example.net", Status: queue.StatusDelivered, Reply: "250 ok", RemoteMTA: "mx.example.net"},
		{Address: "b@example.net", Status: queue.StatusDeferred, Reply: "451 later", NextAttempt: t0.Add(time.Hour)},
	}
	l.written(j, outcomes, t0.Add(time.Second), time.Second)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "rcpt=a@example.net") || !strings.Contains(lines[1], "next_attempt=") ||
		!strings.Contains(lines[0], "tls=dane") {
		t.Fatalf("log lines:\n%s", buf.String())
	}
	if a, b := <-obs.ch, <-obs.ch; a != string(queue.StatusDelivered) || b != string(queue.StatusDeferred) {
		t.Fatalf("counted %s, %s", a, b)
	}
	if len(rec.got) != 1 || rec.got[0] != "example.net tlsa mx.example.net " {
		t.Fatalf("TLS-RPT results %q, want one tlsa", rec.got)
	}
	if got := l.tally(j, outcomes, t0); got[0].TLSRPT != nil {
		t.Fatal("tally without the store taking TLS-RPT counts")
	}
	l.tlsInStore = true
	if got := l.tally(j, outcomes, t0); got[0].TLSRPT == nil || got[0].TLSRPT.Result.Policy != "tlsa" || got[1].TLSRPT != nil {
		t.Fatalf("tally: %+v", got)
	}
	l.written(j, outcomes[:1], t0, 0)
	if len(rec.got) != 1 {
		t.Fatal("the recorder heard of a result the store counts")
	}
}

// sourceCounts is an Observer that hears the source of each attempt.
type sourceCounts struct {
	chanObserver
	got []string
}

func (s *sourceCounts) AttemptedFrom(source string, status queue.Status) {
	s.got = append(s.got, source+" "+string(status))
}

// With egress, the line names the source the attempt went from, and an
// Observer that asks hears it.
func TestOutcomeLogNamesTheSource(t *testing.T) {
	var buf bytes.Buffer
	obs := &sourceCounts{chanObserver: chanObserver{make(chan string, 10)}}
	l := outcomeLog{log: slog.New(slog.NewTextHandler(&buf, nil)), obs: obs}
	src := loopSources(1)[0]
	j := &job{id: "m1", env: &queue.Envelope{Created: t0}, source: &src}
	l.written(j, []queue.Outcome{{Address: "a@example.net", Status: queue.StatusDelivered, Reply: "250 ok"}}, t0, time.Second)
	if !strings.Contains(buf.String(), " source=ip2") {
		t.Fatalf("log line without the source: %s", buf.String())
	}
	if len(obs.got) != 1 || obs.got[0] != "ip2 delivered" {
		t.Fatalf("the observer heard %q", obs.got)
	}
}
