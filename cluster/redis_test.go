package cluster

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/waitfor"
)

// redisServer is a redis-server process started by a test on a loopback
// port, without persistence.
type redisServer struct {
	t    testing.TB
	port int
	args []string // more redis-server options
	cmd  *exec.Cmd
}

// startRedis starts redis-server on a free loopback port. Without the
// binary the test is skipped, unless CI is set: there .ci/run installs it.
func startRedis(t testing.TB, args ...string) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("redis-server is not installed (apt-get install redis-server; .ci/run installs it)")
		}
		t.Fatalf("redis-server is not installed but CI is set: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := &redisServer{t: t, port: port, args: args}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *redisServer) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

// start runs the server (again, on the same port) and waits until it
// accepts connections.
func (r *redisServer) start() {
	r.t.Helper()
	var out bytes.Buffer
	args := append([]string{"--port", fmt.Sprint(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no"}, r.args...)
	r.cmd = exec.Command("redis-server", args...)
	r.cmd.Stdout, r.cmd.Stderr = &out, &out
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	ok := waitfor.Within(5*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", r.port), 100*time.Millisecond)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		c.Write([]byte("PING\r\n"))
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		// -NOAUTH: up, with a password
		return strings.HasPrefix(string(buf[:n]), "+PONG") || strings.HasPrefix(string(buf[:n]), "-NOAUTH")
	})
	if !ok {
		r.stop()
		r.t.Fatalf("redis-server on port %d did not answer PING: %s", r.port, out.String())
	}
}

// probe sends one command (words without spaces) and returns the first
// line of the reply.
func (r *redisServer) probe(words ...string) (string, error) {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", r.port), time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte(strings.Join(words, " ") + "\r\n")); err != nil {
		return "", err
	}
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\r\n")
	return line, err
}

// stop kills the server by its PID and waits for it.
func (r *redisServer) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}

// logBuf collects a node's log lines; safe for the node's goroutines.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuf) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

func (b *logBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
