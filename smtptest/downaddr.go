package smtptest

import (
	"fmt"
	"syscall"
	"testing"
)

// DownAddr returns a loopback address ("127.0.0.1:PORT") that stays down
// for the whole test: a socket is bound to the port, without SO_REUSEADDR,
// and never listens, so a connection to it is refused at once and no
// listener (of this test, a parallel one, or another process) can take the
// port until the test ends. For a next hop that must never answer; an
// address returned by ClosedAddr may be handed out again, and a test that
// runs beside others then finds somebody's server there.
func DownAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("smtptest: socket: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("smtptest: bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("smtptest: getsockname: %v", err)
	}
	in, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("smtptest: bound to %T", sa)
	}
	return fmt.Sprintf("127.0.0.1:%d", in.Port)
}
