package smtptest

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/smtptest/internal/report"
)

// reportPoll is how often, in real time, the server looks for reports that
// have come due by its clock. The clock is a plain func (see WithClock) and
// cannot wake anyone, so a test that moves a fake clock past a report's
// time sees it sent within this.
const reportPoll = 20 * time.Millisecond

// reportTimeout bounds one report's whole SMTP transaction to the next hop.
const reportTimeout = 10 * time.Second

// pendingReport is one report waiting for its time.
type pendingReport struct {
	due  time.Time
	msg  Message
	rcpt string
	then Then
}

// reports holds the reports scheduled and not yet sent.
type reports struct {
	mu      sync.Mutex
	pending []pendingReport
	seq     int
	added   chan struct{} // one token: something was scheduled
}

func newReports() *reports { return &reports{added: make(chan struct{}, 1)} }

func (rs *reports) schedule(p pendingReport) {
	rs.mu.Lock()
	rs.pending = append(rs.pending, p)
	rs.mu.Unlock()
	select {
	case rs.added <- struct{}{}:
	default:
	}
}

// takeDue removes and returns the reports due at now, in scheduling order,
// each with its sequence number.
func (rs *reports) takeDue(now time.Time) (due []pendingReport, seqs []int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	keep := rs.pending[:0]
	for _, p := range rs.pending {
		if now.Before(p.due) {
			keep = append(keep, p)
			continue
		}
		rs.seq++
		due, seqs = append(due, p), append(seqs, rs.seq)
	}
	rs.pending = keep
	return due, seqs
}

func (rs *reports) count() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.pending)
}

// reset forgets the reports not yet sent, with the messages they are about.
func (rs *reports) reset() {
	rs.mu.Lock()
	rs.pending = nil
	rs.mu.Unlock()
}

// runReports sends reports as they come due, until the server closes.
func (s *Server) runReports() {
	defer s.wg.Done()
	for {
		if s.reports.count() == 0 {
			select {
			case <-s.reports.added:
				continue
			case <-s.done:
				return
			}
		}
		if !s.pause(reportPoll) {
			return
		}
		due, seqs := s.reports.takeDue(s.now())
		for i, p := range due {
			s.sendReport(p, seqs[i])
		}
	}
}

// sendReport builds and sends one report and records the outcome as an
// event at stage bounce or complaint.
func (s *Server) sendReport(p pendingReport, seq int) {
	stage, arg := StageBounce, fmt.Sprintf("%d.%d.%d", p.then.Status[0], p.then.Status[1], p.then.Status[2])
	if p.then.Report == ReportComplaint {
		stage, arg = StageComplaint, string(p.then.Feedback)
	}
	e := Event{Client: s.cfg.ReturnTo, Stage: stage, Arg: arg, By: ByRule, From: p.msg.From, To: []string{p.rcpt}, MessageID: p.msg.ID}
	switch {
	case p.msg.From == "":
		// RFC 5321 section 4.5.5 and RFC 3464: nothing is ever sent back to
		// the null sender, or two servers could bounce bounces forever.
		e.Reply = "(not sent: the message came from <>)"
	case s.cfg.ReturnTo == "":
		e.Reply = "(not sent: no return-to address configured)"
	default:
		e.Reply = s.deliverReport(p.msg.From, s.buildReport(p, seq))
	}
	s.record(e)
}

// buildReport writes the bytes of p's report.
func (s *Server) buildReport(p pendingReport, seq int) []byte {
	o := report.Original{ID: p.msg.ID, From: p.msg.From, Rcpt: p.rcpt, ClientIP: hostOf(p.msg.Client), Arrival: p.msg.Time, Data: p.msg.Data}
	rp := report.Reporter{Host: s.hostname, Date: s.now(), Seq: seq}
	if p.then.Report == ReportComplaint {
		return report.Complaint(o, rp, string(p.then.Feedback))
	}
	text := p.then.Text
	if text == "" {
		text = "Delivery to this recipient failed after the message was accepted"
	}
	return report.Bounce(o, rp, p.then.Status, text)
}

// deliverReport sends data from <> to rcpt through the return-to hop and
// returns the final reply, or why it could not be sent.
func (s *Server) deliverReport(rcpt string, data []byte) string {
	conn, err := net.DialTimeout("tcp", s.cfg.ReturnTo, reportTimeout)
	if err != nil {
		return "(not sent: " + err.Error() + ")"
	}
	conn.SetDeadline(time.Now().Add(reportTimeout))
	c := smtp.NewClient(conn)
	defer c.Close()
	reply, err := sendFromNull(c, s.hostname, rcpt, data)
	var se *smtp.SMTPError
	switch {
	case err == nil:
		return reply
	case errors.As(err, &se):
		return replyLine(se)
	}
	return "(not sent: " + err.Error() + ")"
}

// sendFromNull runs one transaction from <> on c and returns the final
// reply line.
func sendFromNull(c *smtp.Client, helo, rcpt string, data []byte) (string, error) {
	if err := c.Hello(helo); err != nil {
		return "", err
	}
	if err := c.Mail("", nil); err != nil {
		return "", err
	}
	if err := c.Rcpt(rcpt, nil); err != nil {
		return "", err
	}
	w, err := c.Data()
	if err != nil {
		return "", err
	}
	if _, err := w.Write(data); err != nil {
		return "", err
	}
	resp, err := w.CloseWithResponse()
	if err != nil {
		return "", err
	}
	c.Quit()
	return "250 " + resp.StatusText, nil
}
