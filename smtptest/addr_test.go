package smtptest

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestDownAddrStaysDown: a connection to DownAddr is refused at once, and
// nobody can listen on it while the test runs.
func TestDownAddrStaysDown(t *testing.T) {
	addr := DownAddr(t)
	_, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s: %v, want connection refused", addr, err)
	}
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
		t.Fatalf("listened on %s while it was to stay down", addr)
	}
}
