package e2e

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtptest"
)

// Several relayq processes sharing their shaping state through one
// redis-server. Each node has its own queue, hostname (its EHLO
// name) and sender domain (node-a.test, ...), so the next hop can tell
// whose mail and connections it sees.

// clusterMessages is how many messages the rate test sends: 2,000 at 20/s
// take 100 s, too long for every `make test`; the full run is
// `go test ./e2e/ -run TestClusterPacesOneDomain -cluster-messages 2000`.
var clusterMessages = flag.Int("cluster-messages", 400, "messages the three-node rate test sends (the full run: 2000)")

// redisProc is a redis-server on a loopback port, without persistence,
// that a test may kill and start again on the same port.
type redisProc struct {
	t    *testing.T
	addr string
	cmd  *exec.Cmd
	out  bytes.Buffer
}

// startRedis starts redis-server, or skips the test when it is not
// installed and CI is unset (.ci/run installs Debian's redis-server).
func startRedis(t *testing.T) *redisProc {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not installed but CI is set: %v", err)
		}
		t.Skip("redis-server is not installed (apt-get install redis-server; .ci/run installs it)")
	}
	// A port another test process took between ClosedAddr and our bind
	// answers PING with that process's redis: its nodes would share our
	// nodes' shaping state (the same scope names, the same slots). Only a
	// server whose process_id is ours will do.
	for range 5 {
		r := &redisProc{t: t, addr: smtptest.ClosedAddr(t)}
		if r.tryStart() {
			t.Cleanup(r.stop)
			return r
		}
	}
	t.Fatal("no redis-server of this test's own after 5 ports")
	return nil
}

func (r *redisProc) url() string { return "redis://" + r.addr + "/0" }

// start runs the server again on its port and waits until it answers.
func (r *redisProc) start() {
	r.t.Helper()
	if !r.tryStart() {
		r.t.Fatalf("redis-server on %s did not answer as this test's own: %s", r.addr, r.out.String())
	}
}

// tryStart runs the server and waits until it answers INFO with its own
// process ID; false (the server stopped) if it never does.
func (r *redisProc) tryStart() bool {
	r.t.Helper()
	_, port, _ := net.SplitHostPort(r.addr)
	r.out.Reset()
	r.cmd = exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.out
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	if !waitfor.Within(10*time.Second, r.ours) {
		r.stop()
		return false
	}
	return true
}

// ours reports whether the server on r.addr answers now and is the
// process r started (INFO's process_id).
func (r *redisProc) ours() bool {
	c, err := net.DialTimeout("tcp", r.addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("INFO server\r\n")); err != nil {
		return false
	}
	want := fmt.Sprintf("\r\nprocess_id:%d\r\n", r.cmd.Process.Pid)
	var got []byte
	buf := make([]byte, 4096)
	for len(got) < 64<<10 {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if strings.Contains(string(got), want) {
			return true
		}
		if err != nil || strings.Contains(string(got), "\r\nprocess_id:") && strings.Contains(string(got), "\r\nrun_id:") {
			return false
		}
	}
	return false
}

// stop kills the server by its PID and waits for it.
func (r *redisProc) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// node is one relayq process of a cluster test.
type node struct {
	*relay
	name  string // node-a, ...: its node_name, EHLO name and sender domain
	admin string // admin API address
}

// sender is the envelope sender of the node's test mail.
func (n *node) sender() string { return "app@" + n.name + ".test" }

// startNodes starts count relayq processes named node-a, node-b, ...
// sharing redisURL, each routing limited.test to mx, with shaping (YAML
// lines under shaping:) and expected_nodes count.
func startNodes(t *testing.T, count int, redisURL, mx, shaping string) []*node {
	t.Helper()
	var nodes []*node
	for i := 0; i < count; i++ {
		name := fmt.Sprintf("node-%c", 'a'+i)
		r := newRelay(t, mx, "", "")
		r.log = newLineLog(20000) // a failure shows the shaping lines of the whole run
		n := &node{relay: r, name: name, admin: smtptest.ClosedAddr(t)}
		cfg := r.configHead(name+".test") + fmt.Sprintf(`admin:
  listen: %q
delivery:
  tls: none
  connect_timeout: 5s
  command_timeout: 30s
  routes:
    limited.test: %q
retry:
  initial_delay: 500ms
  max_delay: 2s
  jitter: 100ms
shaping:
%s
cluster:
  redis_url: %q
  node_name: %s
  expected_nodes: %d
log:
  level: info
`, n.admin, mx, shaping, redisURL, name, count)
		r.startWith(t, []byte(cfg))
		// Shared at once, or, when its first Redis call ran over the 250 ms
		// bound on a loaded host, from the probe that follows (500 ms).
		if err := r.log.waitForAny(10*time.Second, "cluster: shaping state shared through Redis", "cluster: Redis reachable again; shared shaping limits resume"); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s: shaping and cluster lines:\n%s", name, n.log.grep("shaping", "cluster", "suspend", "Redis", "deferred", "destination"))
			}
		})
	}
	return nodes
}

// submitToNodes sends per messages to NODE-uI@limited.test through each
// node at once (one client per node), with tokens tok-prefix-NODE-I, and
// returns the tokens.
func submitToNodes(t *testing.T, nodes []*node, per int, prefix string) []string {
	t.Helper()
	var mu sync.Mutex
	var tokens []string
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes))
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dialClient(n.addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.close()
			for i := 0; i < per; i++ {
				tok := fmt.Sprintf("tok-%s-%s-%d", prefix, n.name, i)
				o, line, err := c.send(n.sender(), fmt.Sprintf("%s-u%d@limited.test", n.name, i), testMessage(tok), nil)
				if err != nil || o != accepted {
					errs <- fmt.Errorf("%s: submit %s: %v %s %v", n.name, tok, o, line, err)
					return
				}
				mu.Lock()
				tokens = append(tokens, tok)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return tokens
}

// checkExactlyOnce fails unless every token arrived exactly once at mx
// and nothing else did.
func checkExactlyOnce(t *testing.T, msgs []smtptest.Message, tokens []string) {
	t.Helper()
	seen := map[string]int{}
	for _, m := range msgs {
		seen[tokenOf(m.Data)]++
	}
	for _, tok := range tokens {
		if seen[tok] != 1 {
			t.Errorf("%s arrived %d times", tok, seen[tok])
		}
		delete(seen, tok)
	}
	for tok, n := range seen {
		t.Errorf("unexpected message %q arrived %d times", tok, n)
	}
}

// perSecond counts arrivals per second from the first one.
func perSecond(msgs []smtptest.Message) []int {
	if len(msgs) == 0 {
		return nil
	}
	first := msgs[0].Time
	for _, m := range msgs {
		if m.Time.Before(first) {
			first = m.Time
		}
	}
	var series []int
	for _, m := range msgs {
		s := int(m.Time.Sub(first) / time.Second)
		for len(series) <= s {
			series = append(series, 0)
		}
		series[s]++
	}
	return series
}

// metric reads one sample of a node's /metrics.
func metric(t *testing.T, n *node, name string) string {
	t.Helper()
	resp, err := http.Get("http://" + n.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

// grep returns the kept lines that contain any of words.
func (l *lineLog) grep(words ...string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
