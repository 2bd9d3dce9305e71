package smtptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestDotStuffedDataRecordedExactly(t *testing.T) {
	s := NewServer(t)
	// The client dot-stuffs lines starting with "."; the server must undo
	// exactly that and keep everything else, CRLFs included.
	body := "Subject: dots\r\n\r\n.leading dot\r\n..two dots\r\n.\r\nnot the end\r\n. space\r\nlast line without dot\r\n"
	if err := send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, body); err != nil {
		t.Fatal(err)
	}
	m := s.WaitMessages(t, 1, waitTimeout)[0]
	if !bytes.Equal(m.Data, []byte(body)) {
		t.Fatalf("recorded body\n%q\nwant\n%q", m.Data, body)
	}
	if m.Size != int64(len(body)) || m.Helo != "client.test" || m.TLS || m.AuthUser != "" {
		t.Fatalf("message metadata = %+v", m)
	}
	if !strings.HasPrefix(m.Client, "127.0.0.1:") {
		t.Fatalf("client = %q", m.Client)
	}
}

func TestEventsTellTheSession(t *testing.T) {
	clock := newFakeClock()
	s := NewServer(t, WithClock(clock.Now))
	if err := send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, testBody); err != nil {
		t.Fatal(err)
	}
	ev := s.WaitEvents(t, 5, waitTimeout)
	want := []struct {
		stage      Stage
		arg, reply string
	}{
		{StageGreeting, "", "220 fakemx.localhost ESMTP Service Ready"},
		{StageEHLO, "client.test", "250 fakemx.localhost Hello client.test"},
		{StageMail, "a@src.test", "250 2.0.0 Roger, accepting mail from <a@src.test>"},
		{StageRcpt, "b@dst.test", "250 2.0.0 I'll make sure <b@dst.test> gets this"},
		{StageData, fmt.Sprintf("%d bytes", len(testBody)), "250 2.0.0 OK: queued"},
	}
	if len(ev) != len(want) {
		t.Fatalf("events = %+v", ev)
	}
	for i, w := range want {
		e := ev[i]
		if e.Stage != w.stage || e.Arg != w.arg || e.Reply != w.reply || !e.Time.Equal(clock.Now()) {
			t.Errorf("event %d = %+v, want %+v", i, e, w)
		}
	}
	line := FormatEvent(ev[3])
	if !strings.Contains(line, "rcpt") || !strings.Contains(line, "b@dst.test -> 250 2.0.0") || !strings.HasPrefix(line, "2030-01-02T03:04:05.000Z 127.0.0.1:") {
		t.Fatalf("FormatEvent = %q", line)
	}
}

func TestConcurrentClientsAndHook(t *testing.T) {
	var mu sync.Mutex
	hooked := 0
	s := NewServer(t, OnMessage(func(Message) { mu.Lock(); hooked++; mu.Unlock() }))
	const clients, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				// t.Fatal is not allowed off the test goroutine: collect.
				errs <- sendNoFatal(s.Addr(), fmt.Sprintf("c%d@src.test", i), fmt.Sprintf("m%d", j))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	msgs := s.WaitMessages(t, clients*each, waitTimeout)
	if len(msgs) != clients*each || s.Connections() != clients*each {
		t.Fatalf("%d messages over %d connections, want %d", len(msgs), s.Connections(), clients*each)
	}
	mu.Lock()
	defer mu.Unlock()
	if hooked != clients*each {
		t.Fatalf("OnMessage called %d times", hooked)
	}
}

func TestDiscardBodiesKeepsSizes(t *testing.T) {
	s := NewServer(t, DiscardBodies(), DiscardEvents())
	if err := send(t, s.Addr(), "a@src.test", []string{"b@dst.test"}, testBody); err != nil {
		t.Fatal(err)
	}
	m := s.WaitMessages(t, 1, waitTimeout)[0]
	if m.Data != nil || m.Size != int64(len(testBody)) {
		t.Fatalf("Data=%q Size=%d, want nil and %d", m.Data, m.Size, len(testBody))
	}
	if len(s.Events()) != 0 || s.EventCount() != 5 {
		t.Fatalf("kept %d events, counted %d; want 0 and 5", len(s.Events()), s.EventCount())
	}
}

func TestWaitForWakesOnRecord(t *testing.T) {
	s := NewServer(t)
	go sendNoFatal(s.Addr(), "a@src.test", "x")
	start := time.Now()
	s.WaitMessages(t, 1, waitTimeout)
	if time.Since(start) > waitTimeout/2 {
		t.Fatal("WaitMessages woke late")
	}
}

func TestWaitForFailsAfterTimeout(t *testing.T) {
	s := NewServer(t)
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.WaitFor(ft, 10*time.Millisecond, func() bool { return false })
	}()
	<-done
	if !ft.failed {
		t.Fatal("WaitFor returned without failing")
	}
}

// fatalRecorder records a Fatalf instead of stopping the test.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(string, ...any) {
	f.failed = true
}

func TestWriteRecord(t *testing.T) {
	var buf bytes.Buffer
	m := Message{Time: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), From: "a@src.test", To: []string{"b@dst.test"}, Data: []byte(testBody), Size: int64(len(testBody))}
	if err := WriteRecord(&buf, m); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(buf.Bytes(), []byte("\n")) || bytes.Count(buf.Bytes(), []byte("\n")) != 1 {
		t.Fatalf("not one line: %q", buf.String())
	}
	var r Record
	if err := json.Unmarshal(buf.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.From != m.From || r.To[0] != "b@dst.test" || r.Size != m.Size || r.Message != testBody || !r.Time.Equal(m.Time) {
		t.Fatalf("record = %+v", r)
	}
}
