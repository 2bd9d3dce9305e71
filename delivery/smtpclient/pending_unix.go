//go:build unix

package smtpclient

import (
	"net"
	"syscall"
)

// pending reports whether conn has bytes to read, or has been closed by
// its peer, without waiting and without taking anything: a MSG_PEEK read
// that may not block. A Go read with a past deadline cannot tell, since it
// fails before it asks the kernel. A connection that cannot be asked is
// taken as quiet.
func pending(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	var rerr error
	var b [1]byte
	if err := rc.Read(func(fd uintptr) bool {
		_, _, rerr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait for readiness
	}); err != nil {
		return true
	}
	// Anything but "would block" is news: a byte (n > 0), the peer's
	// FIN (n == 0) or a socket error.
	return rerr != syscall.EAGAIN && rerr != syscall.EWOULDBLOCK && rerr != syscall.EINTR
}
