package submission

import (
	"sync"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// While the node is drained (its queue handed to another relayq), it takes
// no mail. MAIL, over SMTP and HTTP alike, gets 421 4.3.2 (RFC 3463:
// "system not accepting network messages"): 421 says this host's service
// is unavailable, so a client closes the connection and goes to another
// MX or load-balancer backend at once, where a 451 would invite it to try
// the same host again. A transaction opened before the drain began gets
// 451 4.3.2 at its end of DATA instead: its body is in hand, and that
// reply is the per-message "not now" a client retries later, which
// RFC 5321 allows after DATA; nothing of it is queued.
var (
	errDraining     = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 2}, Message: "This relay is draining its queue and takes no mail, try another host"}
	errDrainingData = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 2}, Message: "This relay is draining its queue and takes no mail, try again later"}
)

// RejectDraining is mail refused because the node is being drained.
const RejectDraining RejectReason = "draining"

// drainGate is the switch SetDraining turns. Commits hold it shared, so
// turning it on waits for a commit under way: once SetDraining(true)
// returns, no message enters the queue until SetDraining(false).
type drainGate struct {
	mu sync.RWMutex
	on bool // guarded by mu
}

// SetDraining stops (on) or restarts the intake of mail on every
// submission path. Turning it on returns only after any commit in
// progress has finished, so a drain that starts afterwards sees every
// message this server will ever have queued.
func (s *Server) SetDraining(on bool) {
	s.drain.mu.Lock()
	s.drain.on = on
	s.drain.mu.Unlock()
	s.log.Info("mail intake", "draining", on)
}

// Draining reports whether SetDraining(true) is in force.
func (s *Server) Draining() bool {
	s.drain.mu.RLock()
	defer s.drain.mu.RUnlock()
	return s.drain.on
}
