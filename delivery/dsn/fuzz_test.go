package dsn

import (
	"bytes"
	"testing"
)

// FuzzWrite feeds odd addresses, diagnostics, IDs and original bytes to
// Write. Whenever Write accepts a report its output must satisfy checkDSN:
// no bare CR or LF, no line over 998 octets, well-formed header lines at
// every level, the right number of parts and recipient groups. A panic
// fails the fuzzer by itself.
func FuzzWrite(f *testing.F) {
	f.Add("bob@example.net", "rfc822;bob@example.net", "550 5.1.1 No such user", "mx.example.net", "alice@example.org", "ENV1", "Q1", []byte(originalMessage), uint8(0), true, int16(0))
	f.Add("a\r\nBcc: x@y", "utf-8;用户@例子", "451 4.7.1 a\nb\rc", "mx\x00", "álvaro@exämple.org\n", "\xff\xfe", "Q\r\n", []byte("Subject: x\n\n--b\r\nbody\rmore"), uint8(1), false, int16(40))
	f.Add("x@y", "", "", "", "s@x", "", "", []byte{}, uint8(2), true, int16(-1))
	f.Add("x@y", ";", "5", " ", " ", " ", " ", bytes.Repeat([]byte("y"), 3000), uint8(3), true, int16(1))
	f.Add("\u2028@\u0085", "nonsense", "--relayq-b", "mx", "s@x", "", "", []byte("--relayq-b\r\n--relayq-b--\r\n"), uint8(4), true, int16(0))

	actions := []string{ActionFailed, ActionDelayed, ActionDelivered, ActionRelayed, ActionExpanded}
	statuses := []string{"5.1.1", "4.4.7", "2.0.0", "2.1.5", "5.7.1"}
	f.Fuzz(func(t *testing.T, final, orcpt, diag, remote, to, envid, queueID string, original []byte, which uint8, full bool, maxReturn int16) {
		r := baseReport()
		r.Boundary = "relayq-b" + queueID // any string must do
		r.To, r.EnvID, r.QueueID = to, envid, queueID
		r.ReturnFull = full
		r.MaxReturn = int64(maxReturn)
		if final == "" {
			final = "x"
		}
		i := int(which) % len(actions)
		r.Recipients = []Recipient{
			{Final: final, Original: orcpt, Action: actions[i], Status: statuses[i], RemoteMTA: remote,
				Diagnostic: diag, LastAttempt: now, WillRetryUntil: now},
			{Final: to + final, Original: diag, Action: actions[(i+1)%len(actions)], Status: statuses[(i+2)%len(statuses)],
				RemoteMTA: orcpt, Diagnostic: remote + diag},
		}
		var buf bytes.Buffer
		if err := Write(&buf, r, bytes.NewReader(original)); err != nil {
			if to != "" {
				t.Fatalf("Write rejected a structurally valid report: %v", err)
			}
			return
		}
		checkDSN(t, buf.Bytes(), r, r.MaxReturn >= 0)
	})
}
