package submission

import (
	"strings"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/preflight"
)

// Preflight is the stream's checks of a message at the end of its header
// section (internal/preflight's Checker is one): it may add header fields
// (before the signer sees the section's end, so they are signed), warn,
// or refuse the message, which is then answered at the end of DATA.
type Preflight interface {
	Active(stream string) bool
	Check(m preflight.Message) preflight.Verdict
}

// PreflightObserver is an Observer that also counts preflight warnings by
// stream and check (the metrics package's does).
type PreflightObserver interface {
	PreflightWarned(stream, check string)
}

// preflightCheck runs the hook on the header section sec and returns the
// fields to add. canAdd is false where the section cannot be changed (too
// long to hold): a verdict that needs fields added is then a refusal.
func (m *Incoming) preflightCheck(sec []byte, stream string, canAdd bool) []byte {
	pf := m.a.s.opts.Preflight
	if pf == nil {
		return nil
	}
	sender := m.a.sender(m.c, stream)
	if !pf.Active(sender.Stream) {
		return nil
	}
	rcpts := make([]string, len(m.t.Recipients))
	for i, r := range m.t.Recipients {
		rcpts[i] = r.Address
	}
	v := pf.Check(preflight.Message{Sender: sender, QueueID: m.d.ID(), MailFrom: m.t.From, Recipients: rcpts, Header: sec})
	if len(v.Add) > 0 && !canAdd && v.Refusal == nil {
		v.Refusal = &preflight.Finding{Check: preflight.CheckOneClick, Code: [3]int{5, 7, 0},
			Text: "preflight one_click: the header section is too long for relayq to add List-Unsubscribe; add it yourself"}
		v.Add = nil
	}
	m.preflight = v
	m.stream = sender.Stream
	return v.Add
}

// preflightDone reports the warnings and returns the refusal, if any, as
// the reply to DATA: 550 with the check's enhanced code and its text,
// which names the check and the fix.
func (m *Incoming) preflightDone() error {
	v := m.preflight
	srv := m.a.s
	if len(v.Warnings) > 0 {
		srv.log.Warn("preflight", "client", m.c.IP.String(), "id", m.d.ID(), "stream", m.stream,
			"checks", preflight.Names(v.Warnings), "detail", warningTexts(v.Warnings))
		if o, ok := srv.opts.Observer.(PreflightObserver); ok {
			for _, w := range v.Warnings {
				o.PreflightWarned(m.stream, w.Check)
			}
		}
	}
	if f := v.Refusal; f != nil {
		return m.a.reject(m.c, RejectPreflight, &smtp.SMTPError{Code: 550,
			EnhancedCode: smtp.EnhancedCode{f.Code[0], f.Code[1], f.Code[2]}, Message: f.Text}, "stream", m.stream, "check", f.Check)
	}
	return nil
}

func warningTexts(fs []preflight.Finding) string {
	t := make([]string, len(fs))
	for i, f := range fs {
		t[i] = f.Text
	}
	return strings.Join(t, "; ")
}

// IsPreflightRefusal reports whether e is a preflight check's refusal
// (the HTTP API answers it 422: the request was understood, the message
// is not acceptable as it is).
func IsPreflightRefusal(e *smtp.SMTPError) bool {
	return e.Code == 550 && e.EnhancedCode[1] == 7 && strings.HasPrefix(e.Message, "preflight ")
}
