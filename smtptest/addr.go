package smtptest

import (
	"net"
	"sync"
	"testing"
)

// ClosedAddr returns a loopback address ("127.0.0.1:PORT") nothing listens
// on right now: a port the kernel just handed out and took back, so a
// connection to it is refused at once, until somebody else is handed the
// same port. For a port a process under test is to listen on later; for a
// next hop that must stay down, DownAddr. It never returns the same
// address twice in one process: a test that asks for two listeners' ports
// (a relay's SMTP and admin addresses, say) gets two, however the kernel
// recycles its ports.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		if handedOut.first(addr) {
			return addr
		}
	}
}

// handedOut is every address ClosedAddr returned in this process.
var handedOut = addrSet{seen: map[string]bool{}}

type addrSet struct {
	mu   sync.Mutex
	seen map[string]bool
}

// first records addr and reports whether it was new.
func (s *addrSet) first(addr string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[addr] {
		return false
	}
	s.seen[addr] = true
	return true
}
