package main

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"net"
	"sync/atomic"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// maxHeadBytes bounds how much of a message the sink reads looking for the
// tag; the relay's own trace headers come before ours.
const maxHeadBytes = 64 << 10

// sink is the next hop: an SMTP server that records when each tagged message
// of the current run arrived and throws the body away.
type sink struct {
	run  string
	base time.Time
	srv  *smtp.Server
	ln   net.Listener

	// recv[seq] is the arrival time as nanoseconds since base, plus one so
	// that zero means "not yet".
	recv     []atomic.Int64
	expected int64
	count    atomic.Int64 // distinct messages of this run received
	dups     atomic.Int64 // the same seq a second time
	foreign  atomic.Int64 // untagged, other run, or seq out of range
	done     chan struct{}
}

// startSink listens on addr (loopback) and expects seqs 0..expected-1 of run.
func startSink(addr, run string, base time.Time, expected int) (*sink, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sink: listen %s: %w", addr, err)
	}
	s := &sink{run: run, base: base, ln: ln, recv: make([]atomic.Int64, expected),
		expected: int64(expected), done: make(chan struct{})}
	if expected == 0 {
		close(s.done)
	}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &sinkSession{s: s}, nil
	}))
	s.srv.Domain = "sink.relaybench.localhost"
	s.srv.ReadTimeout = 5 * time.Minute
	s.srv.WriteTimeout = time.Minute
	s.srv.ErrorLog = log.New(io.Discard, "", 0)
	go s.srv.Serve(ln)
	return s, nil
}

// Addr is the host:port the sink listens on.
func (s *sink) Addr() string { return s.ln.Addr().String() }

// Close stops the sink and drops its connections.
func (s *sink) Close() error { return s.srv.Close() }

// Done is closed once every expected message has arrived.
func (s *sink) Done() <-chan struct{} { return s.done }

// received returns the arrival of seq, relative to base, and whether it came.
func (s *sink) received(seq int) (time.Duration, bool) {
	v := s.recv[seq].Load()
	return time.Duration(v - 1), v != 0
}

// record notes the arrival of one message's tag.
func (s *sink) record(t tag, err error) {
	now := time.Since(s.base)
	if err != nil || t.Run != s.run || t.Seq >= len(s.recv) {
		s.foreign.Add(1)
		return
	}
	if !s.recv[t.Seq].CompareAndSwap(0, int64(now)+1) {
		s.dups.Add(1)
		return
	}
	if s.count.Add(1) == s.expected {
		close(s.done)
	}
}

// sinkSession is one SMTP connection to the sink; it accepts everything.
type sinkSession struct{ s *sink }

func (ss *sinkSession) Reset()                               {}
func (ss *sinkSession) Logout() error                        { return nil }
func (ss *sinkSession) Mail(string, *smtp.MailOptions) error { return nil }
func (ss *sinkSession) Rcpt(string, *smtp.RcptOptions) error { return nil }

// Data scans the header block for the tag, then drains the body. The arrival
// is recorded when the whole message is in, just before the 250.
func (ss *sinkSession) Data(r io.Reader) error {
	br := bufio.NewReaderSize(r, 4096)
	t, terr := tag{}, errNoTag
	read := 0
	for read < maxHeadBytes {
		line, err := br.ReadSlice('\n')
		read += len(line)
		if err != nil && err != bufio.ErrBufferFull {
			if err == io.EOF {
				break
			}
			return fmt.Errorf("sink: read header: %w", err)
		}
		if len(line) <= 2 && (len(line) == 0 || line[0] == '\r' || line[0] == '\n') {
			break // end of header block (RFC 5322 section 2.1)
		}
		if terr == errNoTag {
			if pt, perr := parseTagLine(line); perr != errNoTag {
				t, terr = pt, perr
			}
		}
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return fmt.Errorf("sink: read body: %w", err)
	}
	ss.s.record(t, terr)
	return nil
}
