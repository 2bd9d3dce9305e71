package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// Three nodes sharing one Redis pace one domain limited to 20/s: the next
// hop never sees more than 20/s (+10%) in any 5 s window, although each
// node alone could send far faster, and every message arrives exactly
// once. The per-second series is logged.
func TestClusterPacesOneDomain(t *testing.T) {
	rds := startRedis(t)
	mx := smtptest.NewServer(t)
	nodes := startNodes(t, 3, rds.url(), mx.Addr(), `  domains:
    limited.test: {max_message_rate: "20/s"}`)
	total := *clusterMessages
	per := (total + len(nodes) - 1) / len(nodes)
	tokens := submitToNodes(t, nodes, per, "rate")
	total = len(tokens)
	limit := time.Duration(total)*50*time.Millisecond*2 + 30*time.Second
	msgs := mx.WaitMessages(t, total, limit)
	series := perSecond(msgs)
	t.Logf("%d messages through 3 nodes at a shared 20/s; arrivals per second at the next hop: %v", total, series)
	const window, max = 5, 110 // 20/s +10% over 5 s
	// The first and last seconds are partial; every full 5 s window counts.
	for i := 0; i+window <= len(series); i++ {
		sum := 0
		for _, n := range series[i : i+window] {
			sum += n
		}
		if sum > max {
			t.Errorf("seconds %d-%d: %d arrivals, more than 20/s +10%% (%d per %d s)", i, i+window, sum, max, window)
		}
	}
	// Shared, not divided: the cluster reaches the rate (well above the
	// 20/3 per node that local limits would give) on a loaded machine too.
	if took := len(series); took > total/10+5 {
		t.Errorf("%d messages took %d s: the cluster did not reach its shared rate", total, took)
	}
	for _, n := range nodes {
		if out := n.log.grep("Redis unreachable"); out != "" {
			t.Logf("%s fell back to local limits during the run (a Redis call over its 250 ms timeout on a loaded host):\n%s", n.name, out)
		}
	}
	checkExactlyOnce(t, mx.Messages(), tokens)
}

// A 421 4.7.28 returned to node A (at RCPT: smtpclient retries a failed
// MAIL on a reused connection on a fresh one) suspends the domain on B and C within a
// second: the next hop sees no MAIL and no new connection from them after
// that, while it saw their mail before. A resume on A sends everyone's
// parked mail, each message once.
func TestClusterSuspensionReachesEveryNode(t *testing.T) {
	rds := startRedis(t)
	const reply = "421 4.7.28 Our system has detected an unusual rate of mail"
	mx := smtptest.NewServer(t, smtptest.Reply("rcpt:node-a-#10="+reply))
	nodes := startNodes(t, 3, rds.url(), mx.Addr(), `  domains:
    limited.test: {max_message_rate: "20/s"}
  rules:
    - match: '4\.7\.28'
      action: suspend
      duration: 10m
      scope: domain`)
	tokens := submitToNodes(t, nodes, 100, "sus")
	var at time.Time
	mx.WaitFor(t, 30*time.Second, func() bool {
		for _, e := range mx.Events() {
			if e.Stage == smtptest.StageRcpt && strings.HasPrefix(e.Reply, "421 4.7.28") {
				at = e.Time
				return true
			}
		}
		return false
	})
	for _, n := range nodes[1:] {
		if err := n.log.waitFor(`msg="shaping: scope suspended" scope=domain:limited.test`, 5*time.Second); err != nil {
			t.Fatalf("%s: %v", n.name, err)
		}
		if err := n.log.waitFor(`by="another node"`, time.Second); err != nil {
			t.Fatalf("%s: %v", n.name, err)
		}
	}
	// A negative check needs a window: anything B or C would still send
	// (their queues hold about 90 messages each) would come at the shared
	// 20/s, tens of messages in these three seconds.
	time.Sleep(3 * time.Second)
	before, after, connsAfter := map[string]int{}, map[string]int{}, map[string]int{}
	for _, e := range mx.Events() {
		for _, n := range nodes[1:] {
			switch {
			case e.Stage == smtptest.StageMail && strings.Contains(e.From, "@"+n.name+".test") && e.Time.Before(at):
				before[n.name]++
			case e.Stage == smtptest.StageMail && strings.Contains(e.From, "@"+n.name+".test") && e.Time.After(at.Add(time.Second)):
				after[n.name]++
			case e.Stage == smtptest.StageEHLO && strings.EqualFold(e.Arg, n.name+".test") && e.Time.After(at.Add(time.Second)):
				connsAfter[n.name]++
			}
		}
	}
	t.Logf("421 to node-a at %s; MAIL from the others before it %v, more than 1 s after it %v, new connections then %v",
		at.Format("15:04:05.000"), before, after, connsAfter)
	for _, n := range nodes[1:] {
		if before[n.name] == 0 {
			t.Errorf("%s sent nothing before the 421: the test shows nothing", n.name)
		}
		if after[n.name] > 0 || connsAfter[n.name] > 0 {
			t.Errorf("%s: %d MAIL and %d connections more than 1 s after the 421 to node-a", n.name, after[n.name], connsAfter[n.name])
		}
	}
	if t.Failed() {
		return
	}
	// An operator's resume on node A ends it everywhere: the mail B and C
	// parked for it goes now too, not when the ten minutes are over.
	out, err := exec.Command(relayqBin, "queue", "--admin", "http://"+nodes[0].admin, "resume", "domain:limited.test").CombinedOutput()
	if err != nil {
		t.Fatalf("relayq queue resume: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("after the resume, messages missing by node: %v", missingByNode(mx.Messages(), nodes, tokens))
		}
	})
	mx.WaitMessages(t, len(tokens), 60*time.Second)
	checkExactlyOnce(t, mx.Messages(), tokens)
}

// missingByNode counts, per node, the tokens submitted through it that
// have not arrived: which node kept its mail back.
func missingByNode(msgs []smtptest.Message, nodes []*node, tokens []string) map[string]int {
	arrived := map[string]bool{}
	for _, m := range msgs {
		arrived[tokenOf(m.Data)] = true
	}
	missing := map[string]int{}
	for _, tok := range tokens {
		for _, n := range nodes {
			if !arrived[tok] && strings.Contains(tok, "-"+n.name+"-") {
				missing[n.name]++
			}
		}
	}
	return missing
}

// A node killed with kill -9 while it holds the only connection slot of a
// domain (its MAIL stalled at the next hop): the other node's mail waits,
// then goes once the dead node's lease ran out (cluster.DefaultLeaseTTL,
// 10 s after its last heartbeat or change), without any release.
func TestClusterDeadNodesSlotsComeBack(t *testing.T) {
	rds := startRedis(t)
	mx := smtptest.NewServer(t, smtptest.Reply("mail:@node-a.test=delay 1m 250 OK"))
	nodes := startNodes(t, 2, rds.url(), mx.Addr(), `  domains:
    limited.test: {max_connections: 1}`)
	submitToNodes(t, nodes[:1], 1, "held")
	mx.WaitFor(t, 10*time.Second, func() bool {
		for _, e := range mx.Events() {
			if e.Stage == smtptest.StageEHLO && e.Arg == "node-a.test" {
				return true
			}
		}
		return false
	})
	nodes[0].kill()
	killed := time.Now()
	tokens := submitToNodes(t, nodes[1:], 1, "waits")
	msgs := mx.WaitMessages(t, 1, 30*time.Second)
	took := msgs[0].Time.Sub(killed)
	t.Logf("node-a killed holding the only slot; node-b's message arrived %v later", took.Round(10*time.Millisecond))
	if tokenOf(msgs[0].Data) != tokens[0] {
		t.Fatalf("arrived %q, want %q", tokenOf(msgs[0].Data), tokens[0])
	}
	// The lease was renewed at most a heartbeat (LeaseTTL/3) before the
	// kill, so it ran out 6.7 to 10 s after it; node-b asks every 100 ms.
	if took < 5*time.Second || took > 20*time.Second {
		t.Errorf("node-b's message went %v after the kill; want after the dead node's lease ran out (about 7 to 10 s)", took)
	}
}

// Redis killed mid-run: every node notices, logs it once, reports
// relayq_cluster_redis_up 0 and keeps delivering with its share of the
// limits; Redis back: they say so and share the limits again. Every
// message, before, during and after, arrives exactly once.
func TestClusterRedisOutage(t *testing.T) {
	rds := startRedis(t)
	mx := smtptest.NewServer(t)
	nodes := startNodes(t, 3, rds.url(), mx.Addr(), `  domains:
    limited.test: {max_message_rate: "30/s"}`)
	var tokens []string
	phase := func(name string) {
		t.Helper()
		tokens = append(tokens, submitToNodes(t, nodes, 20, name)...)
		msgs := mx.WaitMessages(t, len(tokens), 60*time.Second)
		t.Logf("%s: %d messages so far; arrivals per second %v", name, len(msgs), perSecond(msgs[len(msgs)-60:]))
	}
	phase("before")
	if got := metric(t, nodes[0], "relayq_cluster_redis_up"); got != "1" {
		t.Errorf("relayq_cluster_redis_up = %q with Redis up", got)
	}
	// A Redis call over its bound on a loaded host is an outage of its
	// own, logged as one: only this one's lines count.
	unreachable := map[string]int{}
	for _, n := range nodes {
		unreachable[n.name] = strings.Count(n.log.grep("Redis unreachable"), "Redis unreachable")
		n.log.fromNow()
	}
	rds.stop()
	waitEveryLog(t, nodes, "cluster: Redis unreachable; shaping with node-local limits")
	if got := metric(t, nodes[0], "relayq_cluster_redis_up"); got != "0" {
		t.Errorf("relayq_cluster_redis_up = %q with Redis down", got)
	}
	phase("outage")
	rds.start()
	waitEveryLog(t, nodes, "cluster: Redis reachable again; shared shaping limits resume")
	for _, n := range nodes {
		if c := strings.Count(n.log.grep("Redis unreachable"), "Redis unreachable") - unreachable[n.name]; c != 1 {
			t.Errorf("%s logged the outage %d times, want once", n.name, c)
		}
	}
	if got := metric(t, nodes[0], "relayq_cluster_redis_up"); got != "1" {
		t.Errorf("relayq_cluster_redis_up = %q after Redis came back", got)
	}
	phase("after")
	checkExactlyOnce(t, mx.Messages(), tokens)
}

// waitEveryLog waits (10 s at most) until each node has logged line.
func waitEveryLog(t *testing.T, nodes []*node, line string) {
	t.Helper()
	for _, n := range nodes {
		if err := n.log.waitFor(line, 10*time.Second); err != nil {
			t.Fatalf("%s: %v", n.name, err)
		}
	}
}
