package smtptest

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Event is one reply the server decided on (or one dropped connection).
type Event struct {
	// Time is when the server decided, by the configured clock.
	Time time.Time
	// Client is the remote address, "ip:port".
	Client string
	// Stage is where in the session the event happened.
	Stage Stage
	// Arg is the command's argument: HELO name, address, "N bytes", or
	// mechanism and user for auth; empty at greeting.
	Arg string
	// Reply is the reply line, e.g. "451 4.7.1 Greylisted, try again in 3
	// seconds", or "(dropped)" when the connection was closed without one.
	Reply string
	// By names what decided a reply other than the default one: a scripted
	// rule, greylisting, the rate limiter or the connection limit.
	By Answerer
	// From is the transaction's sender at mail, rcpt and data.
	From string
	// To is the recipient at rcpt, and the accepted recipients at data.
	To []string
	// MessageID is the accepted message's ID on a data event with 250.
	MessageID string
}

// Answerer names what decided a reply, for Event.By.
type Answerer string

// What can decide a reply; the zero value is the server's default behaviour
// (accepting, or go-smtp's own protocol errors).
const (
	ByDefault   Answerer = ""
	ByRule      Answerer = "rule"
	ByGreylist  Answerer = "greylist"
	ByRateLimit Answerer = "rate-limit"
	ByConnLimit Answerer = "conn-limit"
)

// Message is one message the server accepted with 250.
type Message struct {
	// ID is assigned when the message is recorded: "1", "2", ... in order of
	// arrival, never reused, not even after Reset.
	ID     string
	Time   time.Time
	Client string
	Helo   string
	From   string
	To     []string
	// Data is the body exactly as received after dot-unstuffing (CRLF line
	// ends kept); nil when the server was started with DiscardBodies.
	Data []byte
	// Size is the body length in bytes, also kept with DiscardBodies.
	Size     int64
	TLS      bool
	AuthUser string
	// BodyType and UTF8 are MAIL's BODY= ("7BIT", "8BITMIME" or "") and
	// SMTPUTF8 parameters (RFC 6152, RFC 6531).
	BodyType string
	UTF8     bool
}

// recorder keeps events and messages and wakes waiters on every change.
type recorder struct {
	discardBodies bool
	discardEvents bool

	conns atomic.Int64

	mu        sync.Mutex
	events    []Event
	messages  []Message
	nEvents   int
	nMessages int
	lastID    int
	sources   sourceTally
	changed   chan struct{} // closed and replaced on every record
}

func newRecorder(discardBodies, discardEvents bool) *recorder {
	return &recorder{discardBodies: discardBodies, discardEvents: discardEvents, changed: make(chan struct{}), sources: sourceTally{}}
}

func (r *recorder) addEvent(e Event) {
	r.mu.Lock()
	r.nEvents++
	if !r.discardEvents {
		r.events = append(r.events, e)
	}
	r.notifyLocked()
	r.mu.Unlock()
}

// addMessage gives m its ID, records it and returns the ID.
func (r *recorder) addMessage(m Message) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastID++
	m.ID = strconv.Itoa(r.lastID)
	r.nMessages++
	r.sources.message(m)
	r.messages = append(r.messages, m)
	r.notifyLocked()
	return m.ID
}

// reset forgets every message and event; IDs keep counting up.
func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.messages, r.events = nil, nil
	r.nMessages, r.nEvents = 0, 0
	r.notifyLocked()
}

// deleteMessages forgets the messages with the given IDs and returns how
// many it found; events stay, and IDs keep counting up.
func (r *recorder) deleteMessages(ids map[string]bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	keep := r.messages[:0:0]
	for _, m := range r.messages {
		if !ids[m.ID] {
			keep = append(keep, m)
		}
	}
	n := len(r.messages) - len(keep)
	r.messages = keep
	r.nMessages -= n
	r.notifyLocked()
	return n
}

func (r *recorder) addConn(ip string) {
	r.conns.Add(1)
	r.mu.Lock()
	r.sources.get(ip).Connections++
	r.notifyLocked()
	r.mu.Unlock()
}

// touch wakes waiters without recording anything (the script changed).
func (r *recorder) touch() {
	r.mu.Lock()
	r.notifyLocked()
	r.mu.Unlock()
}

func (r *recorder) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// watch returns a channel closed at the next change.
func (r *recorder) watch() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Messages returns the accepted messages in the order they were accepted.
// The slices inside are shared with the server: read them, don't modify them.
func (s *Server) Messages() []Message {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return append([]Message(nil), s.rec.messages...)
}

// messageByID returns the recorded message with id.
func (s *Server) messageByID(id string) (Message, bool) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	for _, m := range s.rec.messages {
		if m.ID == id {
			return m, true
		}
	}
	return Message{}, false
}

// MessageCount returns how many messages were accepted, without copying them.
func (s *Server) MessageCount() int {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return s.rec.nMessages
}

// Events returns the recorded events in order (nil with DiscardEvents).
func (s *Server) Events() []Event {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return append([]Event(nil), s.rec.events...)
}

// EventCount returns how many events happened, also with DiscardEvents.
func (s *Server) EventCount() int {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return s.rec.nEvents
}

// Connections returns how many TCP connections the server accepted.
func (s *Server) Connections() int {
	return int(s.rec.conns.Load())
}

// WaitFor blocks until cond returns true, re-checking it whenever the server
// records something, and fails the test if timeout passes first or the
// server closes with cond still false. Call it from the test goroutine.
func (s *Server) WaitFor(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		ch := s.rec.watch() // taken before cond so no change is missed
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("smtptest: condition not met within %v", timeout)
			return
		case <-s.done:
			if !cond() {
				t.Fatalf("smtptest: server closed before condition was met")
			}
			return
		}
	}
}

// WaitMessages waits until at least n messages were accepted and returns all
// of them; it fails the test after timeout.
func (s *Server) WaitMessages(t testing.TB, n int, timeout time.Duration) []Message {
	t.Helper()
	s.WaitFor(t, timeout, func() bool { return s.MessageCount() >= n })
	return s.Messages()
}

// WaitEvents waits until at least n events were recorded and returns them;
// it fails the test after timeout.
func (s *Server) WaitEvents(t testing.TB, n int, timeout time.Duration) []Event {
	t.Helper()
	s.WaitFor(t, timeout, func() bool { return s.EventCount() >= n })
	return s.Events()
}
