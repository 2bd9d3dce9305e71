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

// ClosedAddr hands out each address once: two listeners a test starts on
// two of its addresses never collide, whatever ports the kernel recycles.
func TestClosedAddrNeverRepeats(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		addr := ClosedAddr(t)
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
	}
}
