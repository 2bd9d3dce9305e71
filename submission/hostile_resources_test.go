package submission

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/testfs"
	"github.com/relayq/relayq/queue"
)

// Resources: a full disk, a stalled DATA and an overlong DATA line end the
// transaction or session with the right reply and nothing half-queued.

// TestDiskFullGives451 puts the queue on a 2 MiB tmpfs and fills it. A
// submission that needs space gets 451 4.3.0, messages queued before stay
// intact, and once space is back (the filler deleted) submission works
// again. It needs root for mount and is skipped otherwise;
// TestStorageFailureGives451 covers the reply without root.
func TestDiskFullGives451(t *testing.T) {
	dir := testfs.Tmpfs(t, "2m")
	st, err := queue.Open(filepath.Join(dir, "queue.db"), queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	env := startServer(t, func(o *Options) { o.Queue = st })
	env.store = st

	c := dial(t, env.addr)
	before := map[string]string{}
	for i := 0; i < 3; i++ {
		reply, err := send(c, "a@example.org", []string{"b@example.net"}, fmt.Sprintf("Subject: before %d\r\n\r\nkept\r\n", i))
		if err != nil {
			t.Fatal(err)
		}
		id := queueIDFrom(t, reply)
		before[id] = readBody(t, st, id)
	}
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			break
		}
	}
	f.Close()

	big := "Subject: big\r\n\r\n" + strings.Repeat(strings.Repeat("z", 998)+"\r\n", 600) // ~600 kB
	_, err = send(c, "a@example.org", []string{"b@example.net"}, big)
	if smtpCode(err) != 451 || enhanced(err) != "4.3.0" {
		t.Fatalf("submission on a full disk: %v, want 451 4.3.0", err)
	}
	for id, body := range before {
		if got := readBody(t, st, id); got != body {
			t.Fatalf("message %s changed after the disk filled up", id)
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	reply, err := send(c, "a@example.org", []string{"b@example.net"}, big)
	if err != nil {
		t.Fatalf("submission after space came back: %v", err)
	}
	if got := readBody(t, st, queueIDFrom(t, reply)); !strings.HasSuffix(got, big) {
		t.Fatal("message queued after the disk emptied is not intact")
	}
	if n := countMessages(t, st); n != len(before)+1 {
		t.Fatalf("%d messages in the queue, want %d", n, len(before)+1)
	}
}

// TestDataTimeoutEndsSession: when DATA stalls past data_timeout the client
// gets 421 and the session ends. Before, the server answered and read on,
// so the rest of the body was parsed as commands: a body carrying
// "MAIL FROM ... DATA ..." became a second, forged message.
func TestDataTimeoutEndsSession(t *testing.T) {
	tlsConf, pool := testCert(t)
	env := startServer(t, func(o *Options) {
		o.DataTimeout = 300 * time.Millisecond
		o.TLS = tlsConf
	})
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprint("tls=", useTLS), func(t *testing.T) {
			r := rawGreet(t, env.addr, useTLS, pool)
			r.cmd("MAIL FROM:<a@example.org>", "250")
			r.cmd("RCPT TO:<b@example.net>", "250")
			r.cmd("DATA", "354")
			r.send("Subject: stalled\r\n\r\nfirst part\r\n")
			r.expect("421 4.4.2") // the client stalled past data_timeout
			// The rest of the body arrives late; it must not be read as commands.
			_, _ = io.WriteString(r.c, "MAIL FROM:<ceo@example.org>\r\nRCPT TO:<victim@example.net>\r\nDATA\r\nSubject: forged\r\n\r\nforged\r\n.\r\n")
			if ok, rest := closedWithin(r.c, 5*time.Second); !ok || strings.Contains(rest, "250") {
				t.Fatalf("after the DATA timeout: closed %v, server said %q", ok, rest)
			}
		})
	}
	env.wantQueued(t, 0, " from the tail of a timed-out DATA")
}

// TestLongLineInDataIsBody: a DATA line of any length up to the size
// limit is body, read whole: commands written into it after go-smtp's
// 2,000-octet command limit (a smuggling attempt that relies on a server
// cutting long lines) are neither run nor answered, and the one message is
// queued.
func TestLongLineInDataIsBody(t *testing.T) {
	env := startServer(t, nil)
	r := rawDial(t, env.addr)
	r.openData()
	r.send("Subject: long\r\n\r\n" + strings.Repeat("x", 2001) + "MAIL FROM:<ceo@example.org> RCPT TO:<victim@example.net> DATA\r\n.\r\n")
	r.expect("250")
	r.cmd("NOOP", "250") // the next reply is NOOP's: nothing in the line was answered
	env.wantQueued(t, 1, "")
}
