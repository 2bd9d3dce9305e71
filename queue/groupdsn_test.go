package queue

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// A report owed by recipients whose outcomes were recorded apart (attempts
// of one message to several destinations) is marked on disk with the
// outcome. Across a crash (the store closed before the report is queued)
// the mark survives, the message is kept although every recipient is
// final, and Open lists it: the recovery path queues the report once, and
// a second try at the same marks changes nothing.
func TestPendingReportSurvivesReopenAndIsQueuedOnce(t *testing.T) {
	c := newClock()
	o := testOpts(c)
	s, path := openTemp(t, o)
	id := enqueue(t, s, []byte("Subject: x\r\n\r\nbody\r\n"), "a@one.test", "b@two.test", "c@three.test")
	for _, a := range []string{"a@one.test", "b@two.test"} {
		if _, err := s.Record(id, []Outcome{{Address: a, Status: StatusBounced, Reply: "550 5.1.1 No such user", Report: ReportFailed}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Record(id, []Outcome{{Address: "c@three.test", Status: StatusBounced, Expired: true, Reply: "451 4.4.1 timed out", Report: ReportFailed}}); err != nil {
		t.Fatal(err)
	}
	if got := s.Marked(); len(got) != 0 {
		t.Errorf("Marked before any reopen = %v, want none (only what Open found)", got)
	}
	s.Close() // a crash before the last attempt queued the report

	s = openAt(t, path, o)
	if got := s.Marked(); !slices.Equal(got, []string{id}) {
		t.Fatalf("Marked after reopen = %v, want [%s]", got, id)
	}
	env, err := s.Get(id)
	if err != nil {
		t.Fatalf("message with pending reports deleted: %v", err)
	}
	marks := env.Marks()
	if len(marks) != 3 {
		t.Fatalf("marks = %+v, want three failed", marks)
	}
	for _, m := range marks {
		if m.Report != ReportFailed {
			t.Errorf("mark %+v, want failed", m)
		}
	}
	report := Notice{Envelope: Envelope{From: "", Recipients: []Recipient{{Address: "sender@example.org"}}}, Body: []byte("Subject: failed\r\n\r\nall three\r\n")}
	done, err := s.QueueGroupedDSN(id, marks, report)
	if err != nil || !done {
		t.Fatalf("Report = %v, %v; want done", done, err)
	}
	// Retried with the same marks (a second reporter, or a redo after a
	// crash that the first one survived): nothing is queued again.
	if done, err := s.QueueGroupedDSN(id, marks, report); done || !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Report = %v, %v; want nothing done: the message is finished", done, err)
	}
	msgs, _, err := s.Admin().List(ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].From != "" || msgs[0].Recipients[0].Address != "sender@example.org" {
		t.Fatalf("queue after the report = %+v, want the one report alone", msgs)
	}
	var sent int
	for _, ev := range allEvents(t, s, "") {
		if ev.Type == EventDSNSent && ev.QueueID == id {
			sent++
		}
	}
	if sent != 1 {
		t.Errorf("%d dsn_sent events, want 1", sent)
	}
	if h, err := s.History().List(HistoryQuery{}); err != nil || len(h) != 1 || h[0].ID != id || h[0].Marked() {
		t.Errorf("history = %+v, %v; want the finished message without marks", h, err)
	}
	s.Close()
	s = openAt(t, path, o)
	if got := s.Marked(); len(got) != 0 {
		t.Errorf("Marked after the report = %v, want none", got)
	}
}

// Report queues nothing for marks another caller reported first, and
// leaves a message with a recipient still to try in the schedule.
func TestReportStaleMarksChangeNothing(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	id := enqueue(t, s, []byte("body\r\n"), "a@one.test", "b@two.test")
	next := c.Now().Add(time.Minute)
	if _, err := s.Record(id, []Outcome{
		{Address: "a@one.test", Status: StatusBounced, Reply: "550 5.1.1 No", Report: ReportFailed},
		{Address: "b@two.test", Status: StatusDeferred, Reply: "451 4.3.0 Later", NextAttempt: next, Warned: true, Report: ReportDelayed},
	}); err != nil {
		t.Fatal(err)
	}
	env, _ := s.Get(id)
	marks := env.Marks()
	n := Notice{Envelope: Envelope{Recipients: []Recipient{{Address: "sender@example.org"}}}, Body: []byte("report\r\n")}
	if done, err := s.QueueGroupedDSN(id, marks[:1], n); err != nil || !done {
		t.Fatalf("Report(a) = %v, %v", done, err)
	}
	if done, err := s.QueueGroupedDSN(id, marks, n); err != nil || done {
		t.Fatalf("Report(a, b) after a was reported = %v, %v; want false", done, err)
	}
	env, _ = s.Get(id)
	if got := env.Marks(); len(got) != 1 || got[0] != (Mark{Address: "b@two.test", Report: ReportDelayed}) {
		t.Fatalf("marks left = %+v, want b's warning", got)
	}
	if ids, _ := s.due(next, 0, nil); !slices.Contains(ids, id) {
		t.Errorf("message with a deferred recipient left the schedule: due %v", ids)
	}
	msgs, _, _ := s.Admin().List(ListOptions{})
	if len(msgs) != 2 {
		t.Errorf("%d messages, want the original and one report", len(msgs))
	}
}

// A pending report must match its outcome; an unknown kind on disk is
// damage, while records written before the field are read as they are.
func TestReportMarkValidation(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	id := enqueue(t, s, []byte("body\r\n"), "a@one.test")
	if _, err := s.Record(id, []Outcome{{Address: "a@one.test", Status: StatusDelivered, Report: ReportFailed}}); err == nil {
		t.Error("a delivered outcome owing a failed report was accepted")
	}
	if _, err := s.Record(id, []Outcome{{Address: "a@one.test", Status: StatusBounced, Report: "maybe"}}); err == nil {
		t.Error("an unknown report kind was accepted")
	}
	old := []byte(`{"id":"00000000000000010000","from":"x@example.org","recipients":[{"address":"a@one.test","status":"deferred","attempts":2}],"created":"2025-03-01T12:00:00Z","size":4}`)
	env, err := decodeRecord(append([]byte{recordV1}, old...))
	if err != nil || env.Marked() {
		t.Fatalf("record without the field: %+v, %v", env, err)
	}
	bad := []byte(`{"id":"00000000000000010000","from":"x@example.org","recipients":[{"address":"a@one.test","status":"deferred","report":"maybe"}],"size":4}`)
	if _, err := decodeEnvelope(append([]byte{recordV1}, bad...)); !errors.Is(err, ErrDamaged) {
		t.Errorf("unknown pending report decoded: %v", err)
	}
}

// The last attempt of a pass records its outcome and the pass's one
// report, clearing the marks the others left, in one commit: the
// message is then finished and the report queued once. Marks already
// reported make it change nothing (ErrMarksMoved): the outcome is not
// half written.
func TestRecordReportingClearsMarksWithTheOutcome(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	id := enqueue(t, s, []byte("body\r\n"), "a@one.test", "b@two.test")
	if _, err := s.Record(id, []Outcome{{Address: "a@one.test", Status: StatusBounced, Reply: "550 5.1.1 No", Report: ReportFailed}}); err != nil {
		t.Fatal(err)
	}
	env, _ := s.Get(id)
	marks := env.Marks()
	n := Notice{Envelope: Envelope{Recipients: []Recipient{{Address: "sender@example.org"}}}, Body: []byte("report on a and b\r\n")}
	last := []Outcome{{Address: "b@two.test", Status: StatusBounced, Reply: "550 5.1.1 No"}}

	if _, err := s.RecordReporting(id, last, []Mark{{Address: "b@two.test", Report: ReportFailed}}, n); !errors.Is(err, ErrMarksMoved) {
		t.Fatalf("RecordReporting with a mark nobody left = %v, want ErrMarksMoved", err)
	}
	if got, _ := s.Get(id); got.Recipients[1].Status.Final() {
		t.Fatalf("b's outcome written though the marks had moved: %+v", got.Recipients[1])
	}
	after, err := s.RecordReporting(id, last, marks, n)
	if err != nil {
		t.Fatal(err)
	}
	if after.Marked() || !after.Done() {
		t.Errorf("after = %+v, want every recipient final and no mark left", after.Recipients)
	}
	if _, err := s.Get(id); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after the last outcome = %v, want the message finished", err)
	}
	msgs, _, _ := s.Admin().List(ListOptions{})
	if len(msgs) != 1 || msgs[0].From != "" {
		t.Fatalf("queue = %+v, want the one report alone", msgs)
	}
}
