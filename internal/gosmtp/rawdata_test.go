package smtp

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// refOverLimit is the reference for lineLimitReader: upstream's loop over
// every byte. It returns the index of the first byte that makes a line
// longer than limit, or -1.
func refOverLimit(in []byte, limit int) int {
	cur := 0
	for i, chr := range in {
		if chr == '\n' {
			cur = 0
		}
		cur++
		if cur > limit {
			return i
		}
	}
	return -1
}

// cutReader yields in in reads of the sizes cuts gives, in turn.
type cutReader struct {
	in   []byte
	cuts []byte
	i    int
}

func (r *cutReader) Read(p []byte) (int, error) {
	if len(r.in) == 0 {
		return 0, io.EOF
	}
	n := len(p)
	if len(r.cuts) > 0 {
		n = minInt(n, 1+int(r.cuts[r.i%len(r.cuts)]))
		r.i++
	}
	n = copy(p, r.in[:minInt(n, len(r.in))])
	r.in = r.in[n:]
	return n, nil
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// checkLimit reads in through a lineLimitReader and checks that it yields
// a prefix of in: all of it, then EOF; or, when a line is too long, at
// least the whole lines before it (in this read or earlier ones) and none
// of the byte over the limit, then ErrTooLongLine, again and again.
func checkLimit(t *testing.T, in []byte, limit int, cuts []byte) {
	t.Helper()
	lr := &lineLimitReader{R: &cutReader{in: in, cuts: cuts}, LineLimit: limit}
	got, err := io.ReadAll(lr)
	checkPrefix(t, in, refOverLimit(in, limit), got, err)
	if err == ErrTooLongLine {
		if _, err := lr.Read(make([]byte, 10)); err != ErrTooLongLine {
			t.Fatalf("%q: after the long line Read says %v, want ErrTooLongLine again", in, err)
		}
	}
}

// checkPrefix checks what a limited read of in gave: got and err.
func checkPrefix(t *testing.T, in []byte, over int, got []byte, err error) {
	t.Helper()
	if over < 0 {
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("%q: read %q, %v; want all of it", in, got, err)
		}
		return
	}
	whole := bytes.LastIndexByte(in[:over], '\n') + 1
	if err != ErrTooLongLine || len(got) < whole || len(got) > over || !bytes.Equal(got, in[:len(got)]) {
		t.Fatalf("%q: read %q, %v; want %q to %q, then ErrTooLongLine", in, got, err, in[:whole], in[:over])
	}
}

func TestLineLimit(t *testing.T) {
	for _, in := range []string{"", "abc", "abcd", "abc\nabc", "abc\nabcd", "ab\r\nab\r\n", "\n\n\n\n", "abcde\n"} {
		for limit := 1; limit <= 5; limit++ {
			checkLimit(t, []byte(in), limit, nil)
			checkLimit(t, []byte(in), limit, []byte{0})
			checkLimit(t, []byte(in), limit, []byte{1, 0, 2})
		}
	}
}

// FuzzLineLimit compares lineLimitReader with upstream's byte loop.
func FuzzLineLimit(f *testing.F) {
	f.Add([]byte("abc\r\nabcdef\r\n"), uint8(6), []byte{3, 0})
	f.Add([]byte(strings.Repeat("x", 40)+"\n"), uint8(39), []byte{})
	f.Fuzz(func(t *testing.T, in []byte, limit uint8, cuts []byte) {
		checkLimit(t, in, 1+int(limit), cuts)
	})
}

// scriptConn is a net.Conn that reads from r and keeps what is written.
type scriptConn struct {
	net.Conn
	r      io.Reader
	out    bytes.Buffer
	writes int
}

func (c *scriptConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *scriptConn) Write(p []byte) (int, error)      { c.writes++; return c.out.Write(p) }
func (c *scriptConn) Close() error                     { return nil }
func (c *scriptConn) SetWriteDeadline(time.Time) error { return nil }
func (c *scriptConn) SetReadDeadline(time.Time) error  { return nil }

// checkRaw reads in as a DATA stream: first preload bytes into the
// session's buffer, then raw, consuming the sizes takes gives, up to
// stop bytes; then it hands the rest back and reads on with the session's
// buffered reader. What was consumed and what was read after must be in
// itself (up to the line over the line limit, if any, see checkLimit),
// whatever the cuts and the sizes.
func checkRaw(t *testing.T, in []byte, lineLimit, preload, stop int, cuts, takes []byte) {
	t.Helper()
	s := NewServer(nil)
	s.MaxLineLength = lineLimit
	c := newConn(&scriptConn{r: &cutReader{in: in, cuts: cuts}}, s)
	c.lineLimitReader.curLineLength = 1 // the LF of "DATA" CRLF
	if preload > 0 {
		_, _ = c.text.R.Peek(minInt(preload, c.text.R.Size()))
	}
	over := -1
	if lineLimit > 0 {
		// The stream starts after the LF of "DATA" CRLF, as in a session.
		if over = refOverLimit(append([]byte("\n"), in...), lineLimit); over >= 0 {
			over--
		}
	}
	dr := newDataReader(c)
	var got []byte
	var err error
	for i := 0; len(got) < stop; i++ {
		n := 1
		if len(takes) > 0 {
			n = 1 + int(takes[i%len(takes)])%8
		}
		var win []byte
		if win, err = dr.PeekRaw(n); err != nil {
			break
		}
		k := len(win)
		if len(takes) > 0 {
			k = minInt(k, 1+int(takes[i%len(takes)]))
		}
		k = minInt(k, stop-len(got))
		got = append(got, win[:k]...)
		dr.DiscardRaw(k)
	}
	dr.endRaw()
	// go-smtp reads on after Data, whatever the raw read ended with.
	rest, rerr := io.ReadAll(c.text.R)
	got = append(got, rest...)
	if err == nil || err == io.EOF {
		err = rerr
	}
	checkPrefix(t, in, over, got, err)
}

func TestRawData(t *testing.T) {
	body := []byte(strings.Repeat("0123456789abcdef\r\n", 3000) + ".\r\nQUIT\r\n") // over 32 KiB
	for _, stop := range []int{0, 1, 17, 4096, 5000, 40000, len(body)} {
		for _, preload := range []int{0, 3, 4096} {
			checkRaw(t, body, 0, preload, stop, nil, nil)
			checkRaw(t, body, 2000, preload, stop, []byte{200, 7}, []byte{3, 250})
			checkRaw(t, body, 18, preload, stop, []byte{255}, nil)
			checkRaw(t, body, 17, preload, stop, nil, nil) // the first line is one over
		}
	}
}

// FuzzRawData checks that a raw DATA read, handed back, leaves the
// session's stream exactly as the client sent it.
func FuzzRawData(f *testing.F) {
	f.Add([]byte("a\r\n.\r\nQUIT\r\n"), uint8(0), uint16(3), uint16(2), []byte{1}, []byte{0})
	f.Add([]byte(strings.Repeat("abcdefgh\r\n", 50)), uint8(12), uint16(0), uint16(300), []byte{}, []byte{5, 9})
	f.Fuzz(func(t *testing.T, in []byte, lineLimit uint8, preload, stop uint16, cuts, takes []byte) {
		checkRaw(t, in, int(lineLimit), int(preload), int(stop), cuts, takes)
	})
}

// countingListener counts the writes of the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

type rawSession struct{ body chan<- string }

func (rawSession) Mail(string, *MailOptions) error { return nil }
func (rawSession) Rcpt(string, *RcptOptions) error { return nil }
func (rawSession) Reset()                          {}
func (rawSession) Logout() error                   { return nil }
func (s rawSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	s.body <- string(b)
	return err
}

// TestPipelinedRepliesOneWrite: over loopback TCP, the replies to a
// pipelined MAIL, RCPT, RCPT, DATA group leave in one write, and the
// greeting, the EHLO reply and the 354 each reach a client that waits for
// them before it sends on.
func TestPipelinedRepliesOneWrite(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	bodies := make(chan string, 1)
	s := NewServer(BackendFunc(func(*Conn) (Session, error) { return rawSession{bodies}, nil }))
	s.Domain = "relay.test"
	go func() { _ = s.Serve(countingListener{l, &writes}) }()
	defer s.Close()

	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	expect := func(prefix string) {
		t.Helper()
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("waiting for %q: %v", prefix, err)
			}
			if strings.HasPrefix(line, prefix+" ") {
				return
			}
			if !strings.HasPrefix(line, prefix+"-") {
				t.Fatalf("got %q, want %q", line, prefix)
			}
		}
	}
	expect("220")
	_, _ = io.WriteString(c, "EHLO client.test\r\n")
	expect("250")
	before := writes.Load()
	_, _ = io.WriteString(c, "MAIL FROM:<a@example.org>\r\nRCPT TO:<b@example.net>\r\nRCPT TO:<c@example.net>\r\nDATA\r\n")
	for _, code := range []string{"250", "250", "250", "354"} {
		expect(code)
	}
	if n := writes.Load() - before; n != 1 {
		t.Fatalf("replies to one pipelined group took %d writes, want 1", n)
	}
	_, _ = io.WriteString(c, "Subject: x\r\n\r\nhi\r\n.\r\nQUIT\r\n")
	expect("250")
	expect("221")
	if b := <-bodies; b != "Subject: x\r\n\r\nhi\r\n" {
		t.Fatalf("body %q", b)
	}
}

// closingSession answers 421 to one recipient: the server is going away.
type closingSession struct{ rawSession }

func (closingSession) Rcpt(to string, _ *RcptOptions) error {
	if strings.HasPrefix(to, "busy@") {
		return &SMTPError{Code: 421, EnhancedCode: EnhancedCode{4, 3, 2}, Message: "Closing"}
	}
	return nil
}

// A backend's 421 ends the session (RFC 5321 section 3.8) after the
// replies buffered before it, in order: the client reads the MAIL's and
// the first RCPT's 250, then the 421, then end of file, and nothing
// pipelined after it is answered.
func TestBackend421ClosesAfterBufferedReplies(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(BackendFunc(func(*Conn) (Session, error) { return closingSession{rawSession{make(chan string, 1)}}, nil }))
	s.Domain = "relay.test"
	// A command pipelined behind the 421 once reached the logged-out
	// session: a recovered panic, logged.
	errs := &lockedWriter{}
	s.ErrorLog = log.New(errs, "", 0)
	go func() { _ = s.Serve(l) }()
	defer s.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	_, _ = io.WriteString(c, "EHLO client.test\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<b@example.net>\r\nRCPT TO:<busy@example.net>\r\nRCPT TO:<c@example.net>\r\n")
	all, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading until the server closes: %v", err)
	}
	var codes []string
	for _, line := range strings.Split(strings.TrimSuffix(string(all), "\r\n"), "\r\n") {
		if len(line) > 3 && line[3] == ' ' {
			codes = append(codes, line[:3])
		}
	}
	if got := strings.Join(codes, " "); got != "220 250 250 250 421" {
		t.Fatalf("replies %q (%q), want 220 250 250 250 421 and then the end", got, all)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil { // waits for the connection's goroutine
		t.Fatalf("shutdown: %v", err)
	}
	if logged := errs.String(); strings.Contains(logged, "panic") {
		t.Errorf("the server logged:\n%s", logged)
	}
}

// lockedWriter lets the test read what the server's goroutines logged.
type lockedWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
