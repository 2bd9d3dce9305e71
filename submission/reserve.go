package submission

import smtp "github.com/relayq/relayq/internal/gosmtp"

// While the queue's disk is below its reserve (queue.Store.Low), MAIL gets
// 452 4.3.1, "insufficient system storage" (RFC 5321 section 4.5.3.1.10,
// RFC 3463): a temporary refusal that clients retry, while the reserve
// lets the mail already queued be delivered and its history pruned. HTTP
// answers 503 with Retry-After (httpsubmit).
var errNoRoom = &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 3, 1}, Message: "Insufficient system storage, try again later"}

// low reports whether the queue is below its reserve.
func (s *Server) low() bool { return s.opts.Queue != nil && s.opts.Queue.Low() }
