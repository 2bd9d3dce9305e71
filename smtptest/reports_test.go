package smtptest

import (
	"strings"
	"testing"
	"time"
)

// bounceBody is a message as an application would send it.
const bounceBody = "From: App <noreply@app.test>\r\nSubject: Your receipt\r\n\r\nThanks!\r\n"

// findEvent returns the first event at stage, or fails the test.
func findEvent(t *testing.T, events []Event, stage Stage) Event {
	t.Helper()
	for _, e := range events {
		if e.Stage == stage {
			return e
		}
	}
	t.Fatalf("no %s event in %+v", stage, events)
	return Event{}
}

func TestAcceptThenBounceAndComplainByTheClock(t *testing.T) {
	sink := NewServer(t) // the sender's return path: where reports arrive
	clk := newFakeClock()
	start := clk.Now()
	srv := NewServer(t, WithClock(clk.Now), ReturnTo(sink.Addr()), Reply(
		"rcpt:gone@=250 then bounce 5.1.1 after 2s",
		"rcpt:angry@=250 then complain abuse after 5s",
	))
	if err := send(t, srv.Addr(), "bounces+1@app.test", []string{"gone@example.test", "angry@example.test", "ok@example.test"}, bounceBody); err != nil {
		t.Fatalf("the 250s come first: %v", err)
	}

	clk.Advance(2 * time.Second)
	got := sink.WaitMessages(t, 1, waitTimeout)
	bounce := got[0]
	if bounce.From != "" || len(bounce.To) != 1 || bounce.To[0] != "bounces+1@app.test" {
		t.Fatalf("bounce envelope %q -> %q, want <> -> the message's sender", bounce.From, bounce.To)
	}
	for _, want := range []string{"report-type=delivery-status", "Final-Recipient: rfc822; gone@example.test", "Status: 5.1.1", "Diagnostic-Code: smtp; 550 5.1.1", "Subject: Your receipt"} {
		if !strings.Contains(string(bounce.Data), want) {
			t.Errorf("bounce lacks %q", want)
		}
	}
	ev := findEvent(t, srv.WaitEvents(t, 8, waitTimeout), StageBounce)
	if !ev.Time.Equal(start.Add(2*time.Second)) || !strings.HasPrefix(ev.Reply, "250 ") || ev.By != ByRule || ev.MessageID != "1" || ev.To[0] != "gone@example.test" {
		t.Fatalf("bounce event %+v: want sent at start+2s by the clock, 250 from the next hop, about message 1", ev)
	}
	if sink.MessageCount() != 1 {
		t.Fatalf("the complaint went before its 5s: %d reports", sink.MessageCount())
	}

	clk.Advance(3 * time.Second)
	complaint := sink.WaitMessages(t, 2, waitTimeout)[1]
	for _, want := range []string{"report-type=feedback-report", "Feedback-Type: abuse", "Original-Rcpt-To: <angry@example.test>", "Content-Type: message/rfc822"} {
		if !strings.Contains(string(complaint.Data), want) {
			t.Errorf("complaint lacks %q", want)
		}
	}
	ev = findEvent(t, srv.WaitEvents(t, 9, waitTimeout), StageComplaint)
	if a := AttemptOf(ev); a.Command != "(complaint abuse about <angry@example.test> to <bounces+1@app.test>)" || !ev.Time.Equal(start.Add(5*time.Second)) {
		t.Fatalf("complaint attempt %+v", a)
	}
}

func TestReportsThatCannotBeSentAreRecorded(t *testing.T) {
	clk := newFakeClock()
	srv := NewServer(t, WithClock(clk.Now), Reply("rcpt:gone@=250 then bounce 5.1.1"))
	if err := send(t, srv.Addr(), "", []string{"gone@example.test"}, bounceBody); err != nil {
		t.Fatal(err)
	}
	if err := send(t, srv.Addr(), "app@app.test", []string{"gone@example.test"}, bounceBody); err != nil {
		t.Fatal(err)
	}
	var replies []string
	srv.WaitFor(t, waitTimeout, func() bool {
		replies = nil
		for _, e := range srv.Events() {
			if e.Stage == StageBounce {
				replies = append(replies, e.Reply)
			}
		}
		return len(replies) == 2
	})
	if replies[0] != "(not sent: the message came from <>)" || replies[1] != "(not sent: no return-to address configured)" {
		t.Fatalf("replies %q", replies)
	}
}

func TestResetForgetsPendingReports(t *testing.T) {
	sink := NewServer(t)
	clk := newFakeClock()
	srv := NewServer(t, WithClock(clk.Now), ReturnTo(sink.Addr()), Reply("rcpt:gone@=250 then bounce 5.1.1 after 1m"))
	if err := send(t, srv.Addr(), "app@app.test", []string{"gone@example.test"}, bounceBody); err != nil {
		t.Fatal(err)
	}
	srv.Reset()
	if err := send(t, srv.Addr(), "app@app.test", []string{"gone@example.test"}, bounceBody); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	got := sink.WaitMessages(t, 1, waitTimeout)
	if !strings.Contains(string(got[0].Data), "Message-ID: <bounce.2.") {
		t.Fatalf("the report is about the message before Reset:\n%s", got[0].Data)
	}
}
