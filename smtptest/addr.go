package smtptest

import (
	"net"
	"testing"
)

// ClosedAddr returns a loopback address ("127.0.0.1:PORT") nothing listens
// on right now: a port the kernel just handed out and took back, so a
// connection to it is refused at once, until somebody else is handed the
// same port. For a port a process under test is to listen on later; for a
// next hop that must stay down, DownAddr.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
