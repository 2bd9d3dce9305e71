package submission

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// dataSegmentsIn is how many TCP segments with data c has received
// (TCP_INFO tcpi_data_segs_in): with TCP_NODELAY, which Go sets, one per
// write(2) of the peer's small replies.
func dataSegmentsIn(t *testing.T, c net.Conn) uint32 {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var info *unix.TCPInfo
	var ierr error
	if err := raw.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		t.Fatal(err)
	}
	if ierr != nil {
		t.Skipf("TCP_INFO: %v", ierr)
	}
	return info.Data_segs_in
}

// TestPipelinedGroupAnsweredInOneWrite: a client that pipelines MAIL,
// RCPT, RCPT and DATA (RFC 2920) gets the four replies in one segment, one
// write of the server's, not four; the message then goes through as usual.
func TestPipelinedGroupAnsweredInOneWrite(t *testing.T) {
	env := startServer(t, nil)
	r := rawDial(t, env.addr)
	r.cmd("EHLO client.test", "250")
	before := dataSegmentsIn(t, r.c)
	r.send("MAIL FROM:<a@example.org>\r\nRCPT TO:<b@example.net>\r\nRCPT TO:<c@example.net>\r\nDATA\r\n")
	for _, code := range []string{"250", "250", "250", "354"} {
		r.expect(code)
	}
	if n := dataSegmentsIn(t, r.c) - before; n != 1 {
		t.Fatalf("the replies to one pipelined group came in %d segments, want 1", n)
	}
	r.send("Subject: pipelined\r\n\r\nhello\r\n.\r\n")
	id := queueIDFrom(t, r.expect("250 2.0.0 Ok: queued as "))
	if body := readBody(t, env.store, id); body == "" {
		t.Fatalf("message %s stored empty", id)
	}
	r.cmd("QUIT", "221")
}
