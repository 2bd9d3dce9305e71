package queue

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const opReply = "5.0.0 bounced by operator"

// statuses is "addr=status" per recipient of id, or "gone".
func statuses(t *testing.T, s *Store, id string) string {
	t.Helper()
	env, err := s.Get(id)
	if err != nil {
		return "gone"
	}
	var out []string
	for _, r := range env.Recipients {
		out = append(out, r.Address+"="+string(r.Status))
	}
	return strings.Join(out, " ")
}

// An operator's bounce of a domain ends every waiting recipient there, in
// any case and held or not, with the operator's reply and a bounced event
// by the operator; other recipients of the same message and other domains
// are untouched. The dry run counts the same and changes nothing.
func TestBounceDomainEndsItsWaitingRecipientsOnly(t *testing.T) {
	c := newClock()
	s, path := openTemp(t, testOpts(c))
	mixed := enqueueFrom(t, s, "app@example.org", "a@down.test", "b@up.test")
	upper := enqueueFrom(t, s, "app@example.org", "C@DOWN.TEST")
	other := enqueueFrom(t, s, "app@example.org", "x@up.test")
	held := enqueueFrom(t, s, "app@example.org", "h@down.test")
	if err := s.Admin().Hold(held); err != nil {
		t.Fatal(err)
	}
	null := enqueueFrom(t, s, "", "n@down.test")

	req := BounceRequest{Domain: "down.test", Reply: opReply, DryRun: true}
	dry, err := s.Admin().Bounce(req)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{mixed, upper, held, null}
	if !slices.Equal(dry.IDs, want) || dry.Recipients != 4 || len(dry.InFlight) != 0 {
		t.Fatalf("dry run: %+v, want IDs %v and 4 recipients", dry, want)
	}
	if got := statuses(t, s, mixed); got != "a@down.test=queued b@up.test=queued" {
		t.Fatalf("the dry run changed %s: %s", mixed, got)
	}

	req.DryRun = false
	res, err := s.Admin().Bounce(req)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.IDs, want) || res.Recipients != 4 {
		t.Fatalf("bounce: %+v", res)
	}
	for id, want := range map[string]string{
		mixed: "a@down.test=bounced b@up.test=queued", upper: "C@DOWN.TEST=bounced",
		other: "x@up.test=queued", held: "h@down.test=bounced", null: "gone",
	} {
		if got := statuses(t, s, id); got != want {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
	env, _ := s.Get(mixed)
	if r := env.Recipients[0]; r.LastReply != opReply || r.Report != ReportFailed {
		t.Errorf("bounced recipient: reply %q, report %q; want the operator's reply and a failure report owed", r.LastReply, r.Report)
	}
	if env.Recipients[1].Report != ReportNone {
		t.Errorf("the other domain's recipient owes a report")
	}
	evs, _, err := s.Events().List(EventQuery{Types: []EventType{EventBounced}})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4 {
		t.Fatalf("%d bounced events, want 4", len(evs))
	}
	for _, ev := range evs {
		if ev.By != ByOperator || ev.Reply != opReply || ev.EnhancedCode != "5.0.0" {
			t.Errorf("event %+v: want by operator with the operator's reply", ev)
		}
	}
	// The null sender gets no report: its message is history at once.
	h, err := s.History().List(HistoryQuery{Recipient: "n@down.test"})
	if err != nil || len(h) != 1 || h[0].Recipients[0].Status != StatusBounced || h[0].Recipients[0].LastReply != opReply {
		t.Fatalf("history of the null sender's message: %+v, %v", h, err)
	}
	// The marks are on disk: a stop before the reports are queued loses none.
	s.Close()
	s2 := openAt(t, path, testOpts(c))
	if got := s2.Marked(); !slices.Equal(got, []string{mixed, upper, held}) {
		t.Errorf("marked after a restart: %v", got)
	}
}

// A recipient whose attempt is in flight is left, and said to be; once
// the attempt's outcome is written the bounce can take it if it is still
// waiting, and never if it was delivered.
func TestBounceLeavesAttemptsInFlight(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	id := enqueueFrom(t, s, "app@example.org", "a@down.test", "b@down.test", "c@down.test")
	now := c.Now()
	if _, err := s.Claim(id, []string{"a@down.test", "b@down.test"}, now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	res, err := s.Admin().Bounce(BounceRequest{Domain: "down.test", Reply: opReply})
	if err != nil {
		t.Fatal(err)
	}
	flying := []Attempt{{id, "a@down.test"}, {id, "b@down.test"}}
	if res.Recipients != 1 || !slices.Equal(res.InFlight, flying) {
		t.Fatalf("bounce with two in flight: %+v", res)
	}
	if got := statuses(t, s, id); got != "a@down.test=queued b@down.test=queued c@down.test=bounced" {
		t.Fatalf("after the bounce: %s", got)
	}
	ended := s.AttemptsEnded()
	if _, err := s.Record(id, []Outcome{
		{Address: "a@down.test", Status: StatusDelivered, Reply: "250 ok"},
		{Address: "b@down.test", Status: StatusDeferred, Reply: "451 4.4.1 no answer", NextAttempt: now.Add(time.Hour)},
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("recording the outcome did not tell AttemptsEnded's waiters")
	}
	if n := s.InFlight(flying); n != 0 {
		t.Fatalf("%d still in flight after the outcome", n)
	}
	res, err = s.Admin().Bounce(BounceRequest{Domain: "down.test", Reply: opReply, Only: flying})
	if err != nil {
		t.Fatal(err)
	}
	if res.Recipients != 1 || len(res.InFlight) != 0 {
		t.Fatalf("second pass: %+v, want the deferred one bounced", res)
	}
	if got := statuses(t, s, id); got != "a@down.test=delivered b@down.test=bounced c@down.test=bounced" {
		t.Fatalf("after the second pass: %s", got)
	}
	// Kept until its one report, for both bounced recipients, is queued.
	env, err := s.Get(id)
	if err != nil || !slices.Equal(env.Marks(), []Mark{{"b@down.test", ReportFailed}, {"c@down.test", ReportFailed}}) {
		t.Fatalf("marks: %+v, %v", env, err)
	}
}

// The first attempt's claim, made when the message was queued, counts as
// in flight once used; a bounce that began first makes it unusable, so
// the attempt must Claim, which finds the recipient bounced.
func TestBounceAndTheFirstClaim(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	now := c.Now()
	used := commitClaimed(t, s, now, now.Add(time.Minute), "a@down.test")
	if got := s.UseFirstClaim(&used, []string{"a@down.test"}, now); len(got.Addrs) != 1 {
		t.Fatalf("fresh first claim not used: %v", got.Addrs)
	}
	waiting := commitClaimed(t, s, now, now.Add(time.Minute), "b@down.test")
	res, err := s.Admin().Bounce(BounceRequest{Domain: "down.test", Reply: opReply})
	if err != nil {
		t.Fatal(err)
	}
	if res.Recipients != 1 || !slices.Equal(res.InFlight, []Attempt{{used.ID, "a@down.test"}}) {
		t.Fatalf("bounce: %+v, want the used claim left in flight", res)
	}
	if got := s.UseFirstClaim(&waiting, []string{"b@down.test"}, now); len(got.Addrs) != 0 {
		t.Fatalf("first claim of a message bounced meanwhile used for %v", got.Addrs)
	}
	claimed, err := s.Claim(waiting.ID, []string{"b@down.test"}, now, now.Add(time.Minute))
	if err != nil || len(claimed.Addrs) != 0 {
		t.Fatalf("claim after the bounce: %v, %v", claimed.Addrs, err)
	}
	s.EndAttempt(used.ID, []string{"a@down.test"})
	if n := s.InFlight(res.InFlight); n != 0 {
		t.Errorf("EndAttempt left %d in flight", n)
	}
	later := commitClaimed(t, s, now, now.Add(time.Minute), "c@down.test")
	if got := s.UseFirstClaim(&later, []string{"c@down.test"}, now); len(got.Addrs) != 1 {
		t.Errorf("a message queued after the bounce cannot use its first claim")
	}
}

func TestBounceRefusesBadRequests(t *testing.T) {
	s, _ := openTemp(t, testOpts(newClock()))
	for _, req := range []BounceRequest{{Reply: opReply}, {Domain: "d.test"}, {Domain: "d.test", Reply: "5.0.0 a\r\nb"}} {
		if _, err := s.Admin().Bounce(req); err == nil {
			t.Errorf("Bounce(%+v) accepted", req)
		}
	}
}

// A bounced event by the operator keeps its By through the binary record;
// one by the relay has none, and the code it uses stays free of EventTypes.
func TestOperatorBounceEventRecord(t *testing.T) {
	// Every type has a code in one of the two formats, none the operator's.
	for i, typ := range EventTypes {
		ev := Event{Type: typ, Recipient: "a@d.test", Time: time.UnixMilli(1e12).UTC()}
		rec, err := appendEvent(nil, &ev)
		if err != nil {
			t.Fatalf("type %s: %v", typ, err)
		}
		if wide := rec[0] == eventWide; wide != (i >= wideBase) || rec[0] == eventFormat && rec[5]&0x0f == kindOperatorBounce {
			t.Errorf("type %s (index %d): format %d, code %d", typ, i, rec[0], rec[5]&0x0f)
		}
		if got, err := decodeEvent(rec); err != nil || got.Type != typ || (got.By != "") != byOperator(typ) {
			t.Errorf("type %s decoded as %+v, %v", typ, got, err)
		}
	}
	for _, by := range []string{ByOperator, ""} {
		ev := Event{Type: EventBounced, QueueID: "18ECAF2DCCF80C22C6A8", Recipient: "a@d.test", Reply: opReply, By: by, Time: time.UnixMilli(1e12).UTC()}
		rec, err := appendEvent(nil, &ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeEvent(rec)
		if err != nil || got.Type != EventBounced || got.By != by || got.Reply != opReply {
			t.Errorf("by %q: decoded %+v, %v", by, got, err)
		}
	}
	if _, err := appendEvent(nil, &Event{Type: EventDelivered, By: ByOperator}); err == nil {
		t.Error("a delivered event by the operator was encoded")
	}
}

// A job that records without an attempt (an expiry) begins one all the
// same: a bounce leaves its recipients, and one that ran first is seen in
// the message BeginAttempt returns.
func TestBeginAttemptOrdersWithBounce(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	first := enqueueFrom(t, s, "app@example.org", "a@down.test", "b@down.test")
	env, err := s.BeginAttempt(first, []string{"a@down.test"})
	if err != nil || len(env.Recipients) != 2 {
		t.Fatalf("BeginAttempt: %+v, %v", env, err)
	}
	res, err := s.Admin().Bounce(BounceRequest{Domain: "down.test", Reply: opReply})
	if err != nil || res.Recipients != 1 || !slices.Equal(res.InFlight, []Attempt{{first, "a@down.test"}}) {
		t.Fatalf("bounce: %+v, %v", res, err)
	}
	env, err = s.BeginAttempt(first, []string{"b@down.test"})
	if err != nil || env.Recipients[1].Status != StatusBounced {
		t.Fatalf("after the bounce: %+v, %v", env, err)
	}
	if n := s.InFlight([]Attempt{{first, "b@down.test"}}); n != 0 {
		t.Errorf("a bounced recipient was registered in flight")
	}
	if _, err := s.BeginAttempt("00000000000000000000", nil); err == nil {
		t.Error("BeginAttempt of an unknown message succeeded")
	}
}
