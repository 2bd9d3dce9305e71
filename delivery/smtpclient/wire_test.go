package smtpclient

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/textproto"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/smtpcodes"
)

// stuffed is the reference dot-stuffing of RFC 5321 section 4.5.2: every
// line that starts with a dot gets one more, and a final dot line ends it.
func stuffed(body string) string {
	if body == "" {
		return ".\r\n"
	}
	if !strings.HasSuffix(body, "\r\n") {
		body += "\r\n"
	}
	lines := strings.SplitAfter(body, "\r\n")
	var b strings.Builder
	for _, l := range lines {
		if strings.HasPrefix(l, ".") {
			b.WriteByte('.')
		}
		b.WriteString(l)
	}
	return b.String() + ".\r\n"
}

func TestDataWriterStuffsDotsAcrossWrites(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	pieces := []string{".", "..", "a", "\r\n", ".\r\n", "x.y", "\r\n.", "text line"}
	for n := 0; n < 500; n++ {
		var body strings.Builder
		for k := rnd.IntN(12); k > 0; k-- {
			body.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		in := body.String()
		if strings.Contains(strings.ReplaceAll(in, "\r\n", ""), "\r") || strings.Contains(strings.ReplaceAll(in, "\r\n", ""), "\n") {
			continue // dataWriter's input is CRLF-clean
		}
		var out bytes.Buffer
		bw := bufio.NewWriterSize(&out, 16)
		dw := &dataWriter{wire: &wire{w: bw, conn: nopDeadline{}}}
		// Split the body at random points: the state at a write boundary
		// must carry over.
		rest := in
		for len(rest) > 0 {
			k := 1 + rnd.IntN(len(rest))
			if _, err := dw.Write([]byte(rest[:k])); err != nil {
				t.Fatal(err)
			}
			rest = rest[k:]
		}
		if err := dw.close(); err != nil {
			t.Fatal(err)
		}
		bw.Flush()
		if got, want := out.String(), stuffed(in); got != want {
			t.Fatalf("body %q: wire got %q, want %q", in, got, want)
		}
	}
}

func TestReplyParsing(t *testing.T) {
	tests := []struct {
		in       string
		code     int
		text     string
		protoErr bool
	}{
		{in: "250 ok\r\n", code: 250, text: "ok"},
		{in: "250\r\n", code: 250, text: ""},
		{in: "250-first\r\n250-second\r\n250 last\r\n", code: 250, text: "first\nsecond\nlast"},
		{in: "550 5.1.1 no such user\n", code: 550, text: "5.1.1 no such user"},
		{in: "250-first\r\n251 changed\r\n", protoErr: true},
		{in: "25 short\r\n", protoErr: true},
		{in: "abc nope\r\n", protoErr: true},
		{in: "250xno separator\r\n", protoErr: true},
		{in: "999 out of range\r\n", protoErr: true},
		{in: "250 " + strings.Repeat("x", 5000) + "\r\n", protoErr: true},
		{in: strings.Repeat("250-more\r\n", maxReplyLines+5) + "250 end\r\n", protoErr: true},
	}
	for _, tt := range tests {
		code, text, err := parseReplies(tt.in)
		if tt.protoErr {
			if err == nil || smtpcodes.Classify(smtpcodes.StageMail, err).Enhanced != "4.5.0" {
				t.Errorf("%.40q: got %d %q %v, want a protocol error", tt.in, code, text, err)
			}
			continue
		}
		if err != nil || code != tt.code || text != tt.text {
			t.Errorf("%q: got %d %q %v, want %d %q", tt.in, code, text, err, tt.code, tt.text)
		}
	}
}

// parseReplies reads one reply from in as a wire would from a server.
func parseReplies(in string) (int, string, error) {
	client, server := net.Pipe()
	defer client.Close()
	go func() {
		_, _ = server.Write([]byte(in))
		server.Close()
	}()
	return newWire(client, 5*time.Second).reply()
}

func FuzzReply(f *testing.F) {
	for _, s := range []string{"250 ok\r\n", "250-a\r\n250 b\r\n", "421 4.7.0 bye\r\n", "250-x\n", "2\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		w := &wire{r: bufio.NewReaderSize(bytes.NewReader(in), 4096), conn: nopDeadline{}}
		code, _, err := w.reply()
		if err == nil && (code < 200 || code > 599) {
			t.Fatalf("accepted reply code %d", code)
		}
	})
}

// nopDeadline is a net.Conn for reading replies from memory.
type nopDeadline struct{ net.Conn }

func (nopDeadline) SetDeadline(time.Time) error { return nil }

// scriptServer is a bare SMTP server on loopback that records what it is
// sent and how: whether each command came while the client was still
// waiting for replies (pipelined) and the message content as sent, dots
// and all. go-smtp's server (smtptest) always offers PIPELINING and hides
// the wire form of the content; this one does neither.
type scriptServer struct {
	addr string
	ext  []string
	// hold makes the server keep its replies until DATA arrives: a client
	// that does not pipeline then waits for a reply that never comes.
	hold  bool
	reply func(cmd string) string // "" for the default reply

	mu       sync.Mutex
	cmds     []string
	buffered []bool   // a further command was already waiting when cmds[i] was read
	data     []string // content as received, up to and including the final dot
}

func newScriptServer(t *testing.T, s *scriptServer) *scriptServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); s.serve(c) }()
		}
	}()
	return s
}

func (s *scriptServer) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	w.WriteString("220 script ready\r\n")
	w.Flush()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.TrimRight(line, "\r\n")
		verb := strings.ToUpper(strings.Fields(cmd + " x")[0])
		s.mu.Lock()
		s.cmds = append(s.cmds, cmd)
		s.buffered = append(s.buffered, r.Buffered() > 0)
		s.mu.Unlock()
		reply := ""
		if s.reply != nil {
			reply = s.reply(cmd)
		}
		switch {
		case reply != "":
		case verb == "EHLO":
			reply = "250-script"
			for _, e := range s.ext {
				reply += "\r\n250-" + e
			}
			reply += "\r\n250 HELP"
		case verb == "DATA":
			reply = "354 go on"
		case verb == "QUIT":
			reply = "221 bye"
		default:
			reply = "250 2.0.0 ok"
		}
		w.WriteString(reply + "\r\n")
		if !s.hold || verb == "DATA" || verb == "EHLO" || verb == "QUIT" || verb == "RSET" || verb == "." {
			w.Flush()
		}
		if verb == "QUIT" {
			return
		}
		if verb == "DATA" && strings.HasPrefix(reply, "354") {
			var content strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				content.WriteString(l)
				if l == ".\r\n" {
					break
				}
			}
			s.mu.Lock()
			s.data = append(s.data, content.String())
			s.mu.Unlock()
			w.WriteString("250 2.0.0 queued\r\n")
			w.Flush()
		}
	}
}

func (s *scriptServer) log() ([]string, []bool, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.cmds...), append([]bool(nil), s.buffered...), append([]string(nil), s.data...)
}

func TestPipelinesWhenOffered(t *testing.T) {
	srv := newScriptServer(t, &scriptServer{ext: []string{"PIPELINING", "SIZE 100000"}, hold: true,
		reply: func(cmd string) string {
			if strings.Contains(cmd, "<no@") {
				return "550 5.1.1 no such user"
			}
			return ""
		}})
	body := "Subject: dots\r\n\r\n.leading dot\r\n..two\r\nend"
	env := envelope("a@example.test", "no@example.test", "b@example.test")
	d := scriptDialer(t)
	d.CommandTimeout = 3 * time.Second // a client that waits for each reply times out here
	res := deliver(t, d, []Hop{hopTo(t, srv.addr)}, env, bodyOf(body))
	wantReply(t, res[0], smtpcodes.Success, 250, "2.0.0")
	wantReply(t, res[1], smtpcodes.Permanent, 550, "5.1.1")
	wantReply(t, res[2], smtpcodes.Success, 250, "2.0.0")

	cmds, buffered, data := srv.log()
	mail := -1
	for i, c := range cmds {
		if strings.HasPrefix(c, "MAIL FROM:") {
			mail = i
		}
	}
	if mail < 0 || len(cmds) < mail+5 || cmds[mail+4] != "DATA" {
		t.Fatalf("commands %q: want MAIL, three RCPTs and DATA", cmds)
	}
	for i := mail; i < mail+4; i++ {
		if !buffered[i] {
			t.Errorf("%q was sent alone; MAIL to DATA should go in one group (RFC 2920)", cmds[i])
		}
	}
	if len(data) != 1 || data[0] != stuffed(body) {
		t.Errorf("content on the wire %q, want %q", data, stuffed(body))
	}
}

func TestWaitsForEachReplyWithoutPipelining(t *testing.T) {
	srv := newScriptServer(t, &scriptServer{ext: []string{"8BITMIME"}})
	res := deliver(t, scriptDialer(t), []Hop{hopTo(t, srv.addr)}, envelope("a@example.test", "b@example.test"), bodyOf(testBody))
	wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
	cmds, buffered, _ := srv.log()
	for i, c := range cmds {
		if buffered[i] {
			t.Errorf("%q came with another command behind it from a server without PIPELINING", c)
		}
	}
	if want := "MAIL FROM:<sender@example.test> BODY=8BITMIME"; !slices.Contains(cmds, want) {
		t.Errorf("commands %q lack %q", cmds, want)
	}
}

func TestPipelinedDataWithoutRecipientsSendsLoneDot(t *testing.T) {
	// A server may answer DATA with 354 even though it refused every
	// recipient; the client must then end DATA at once (RFC 2920 section
	// 3.1) rather than send the message to nobody.
	srv := newScriptServer(t, &scriptServer{ext: []string{"PIPELINING"}, reply: func(cmd string) string {
		if strings.HasPrefix(cmd, "RCPT") {
			return "550 5.1.1 no"
		}
		return ""
	}})
	res := deliver(t, scriptDialer(t), []Hop{hopTo(t, srv.addr)}, envelope("a@example.test"), bodyOf(testBody))
	wantAll(t, res, smtpcodes.Permanent, 550, "5.1.1")
	cmds, _, data := srv.log()
	if len(data) != 1 || data[0] != ".\r\n" {
		t.Errorf("content sent %q, want only the final dot", data)
	}
	if !slices.Contains(cmds, "RSET") {
		t.Errorf("commands %q: want RSET after the empty DATA", cmds)
	}
}

func TestPipelinedMailRefusalTriesNextHop(t *testing.T) {
	busy := newScriptServer(t, &scriptServer{ext: []string{"PIPELINING"}, reply: func(cmd string) string {
		switch {
		case strings.HasPrefix(cmd, "MAIL"):
			return "451 4.3.0 try later"
		case strings.HasPrefix(cmd, "RCPT"), cmd == "DATA":
			return "503 5.5.1 no MAIL"
		}
		return ""
	}})
	good := newScriptServer(t, &scriptServer{ext: []string{"PIPELINING"}})
	res := deliver(t, scriptDialer(t), []Hop{hopTo(t, busy.addr), hopTo(t, good.addr)}, envelope("a@example.test"), bodyOf(testBody))
	wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
	if _, _, data := busy.log(); len(data) != 0 {
		t.Errorf("refusing hop got content %q", data)
	}
	if cmds, _, _ := busy.log(); cmds[len(cmds)-1] != "QUIT" {
		t.Errorf("refusing hop: commands %q, want QUIT last after reading every reply", cmds)
	}
}

// scriptDialer is a Dialer whose cached connections are closed when the
// test ends, before the scriptServer waits for its sessions to finish.
func scriptDialer(t *testing.T) *Dialer {
	d := testDialer()
	t.Cleanup(d.Close)
	return d
}

func TestLargeRecipientListIsNotPipelined(t *testing.T) {
	// More RCPTs than maxPipelined go one by one even to a PIPELINING
	// server, so that neither side can fill the other's socket buffers.
	srv := newScriptServer(t, &scriptServer{ext: []string{"PIPELINING"}})
	var rcpts []string
	for i := 0; i <= maxPipelined; i++ {
		rcpts = append(rcpts, fmt.Sprintf("r%d@example.test", i))
	}
	res := deliver(t, scriptDialer(t), []Hop{hopTo(t, srv.addr)}, envelope(rcpts...), bodyOf(testBody))
	wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
	cmds, buffered, _ := srv.log()
	for i, c := range cmds {
		if buffered[i] {
			t.Fatalf("%q came with another command behind it; %d recipients should not be pipelined", c, len(rcpts))
		}
	}
}

func TestHeloFallbackForServersWithoutEHLO(t *testing.T) {
	// An RFC 821 server refuses EHLO with 500 or 502: say HELO and use no
	// extension at all (RFC 5321 section 4.1.1.1).
	srv := newScriptServer(t, &scriptServer{reply: func(cmd string) string {
		if strings.HasPrefix(cmd, "EHLO") {
			return "502 5.5.1 command not recognised"
		}
		return ""
	}})
	env := envelope("a@example.test")
	env.RET, env.EnvID = "FULL", "env-1"
	res := deliver(t, scriptDialer(t), []Hop{hopTo(t, srv.addr)}, env, bodyOf(testBody))
	wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
	cmds, _, _ := srv.log()
	for _, want := range []string{"EHLO relay.test", "HELO relay.test", "MAIL FROM:<sender@example.test>", "RCPT TO:<a@example.test>"} {
		if !slices.Contains(cmds, want) {
			t.Errorf("commands %q lack %q", cmds, want)
		}
	}
}

// BenchmarkDataWriter stuffs a 20 KiB message (relaybench's scenario b size) with
// relayq's writer and, for comparison, with net/textproto's DotWriter,
// which go-smtp's client uses.
func BenchmarkDataWriter(b *testing.B) {
	var msg bytes.Buffer
	for msg.Len() < 20<<10 {
		msg.WriteString("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod.\r\n")
		msg.WriteString(".a line that starts with a dot\r\n")
	}
	body := msg.Bytes()
	b.Run("relayq", func(b *testing.B) {
		bw := bufio.NewWriterSize(io.Discard, wireBuffer)
		w := &wire{w: bw, conn: nopDeadline{}}
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			dw := &dataWriter{wire: w}
			_, _ = dw.Write(body)
			_ = dw.close()
			_ = bw.Flush()
		}
	})
	b.Run("textproto", func(b *testing.B) {
		tw := textproto.NewWriter(bufio.NewWriterSize(io.Discard, 4096))
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			dw := tw.DotWriter()
			_, _ = dw.Write(body)
			_ = dw.Close()
		}
	})
}

func TestCommandWithLineBreakIsNeverSent(t *testing.T) {
	// A line break inside a command would smuggle a second one; the wire
	// refuses to send it, whatever layer above forgot to check.
	srv := newScriptServer(t, &scriptServer{})
	d := scriptDialer(t)
	d.Hostname = "relay.test\r\nRSET"
	res := deliver(t, d, []Hop{hopTo(t, srv.addr)}, envelope("a@example.test"), bodyOf(testBody))
	wantAll(t, res, smtpcodes.Transient, 0, "4.5.0")
	if cmds, _, _ := srv.log(); slices.Contains(cmds, "RSET") || len(cmds) > 0 && strings.HasPrefix(cmds[0], "EHLO") {
		t.Errorf("server got %q; nothing from the broken EHLO should reach it", cmds)
	}
}
