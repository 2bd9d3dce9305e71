package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relayq/relayq/delivery/shaping"
)

var _ shaping.Shared = (*Node)(nil)

// Prefix starts every key relayq keeps in Redis. The braces are a hash tag:
// all keys share one slot, so the scripts may touch several of them.
const Prefix = "relayq:{shaping}:"

// Node is a shaping.State shared with the other nodes through Redis, with
// node-local limits while Redis cannot be reached. Safe for concurrent
// use; Close stops it.
type Node struct {
	cfg    Config
	rdb    *redis.Client
	log    *slog.Logger
	prefix string

	up      atomic.Bool
	local   atomic.Pointer[shaping.Memory] // buckets while Redis is down
	stopped chan struct{}
	done    chan struct{} // loop ended
	flushed chan struct{} // flusher ended
	once    sync.Once

	// pub is held shared by calls that change this node's connection
	// counts in Redis and exclusively by the heartbeat that rewrites them,
	// so that the rewrite never misses a call in flight.
	pub  sync.RWMutex
	hmu  sync.Mutex
	held map[string]int // this node's connections by scope: the truth
	// released are releases not yet sent to Redis, by scope; the flusher
	// sends them, a heartbeat makes them moot. Guarded by hmu.
	released map[string]int
	flush    chan struct{}
	// granted is the limit of each scope under which Redis last counted
	// a connection of this node (reuse). Guarded by hmu.
	granted map[string]int
	sending map[string]bool // scopes of the flush on its way, if any
	sent    chan struct{}   // closed when that flush ends

	sus   suspensions
	tok   tokens
	paces paceView // learned rates (paces.go)
}

// NewState returns the shaping.State for cfg and what to close at
// shutdown: a shaping.Memory (nothing to close) when cfg.RedisURL is
// empty, else a *Node. An unreachable Redis delays it by one call's
// timeout at most, and means node-local limits until Redis answers.
func NewState(cfg Config, log *slog.Logger) (shaping.State, io.Closer, error) {
	if cfg.RedisURL == "" {
		return &shaping.Memory{}, nopCloser{}, nil
	}
	n, err := New(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	return n, n, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// New returns a Node for cfg (cfg.RedisURL set). It tries Redis once
// before returning (bounded by cfg.Timeout) and keeps trying in the
// background.
func New(cfg Config, log *slog.Logger) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkNodeName(cfg.NodeName); err != nil {
		return nil, err
	}
	opts, err := cfg.redisOptions()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	setRedisLogger(log)
	n := &Node{
		cfg:     cfg,
		rdb:     redis.NewClient(opts),
		log:     log,
		prefix:  Prefix,
		stopped: make(chan struct{}),
		done:    make(chan struct{}),
		flushed: make(chan struct{}),
		held:    map[string]int{},

		released: map[string]int{},
		granted:  map[string]int{},
		flush:    make(chan struct{}, 1),
	}
	n.sus = suspensions{
		snap: map[string]entry{}, recent: map[string]patch{}, pending: map[string]entry{},
		removals: map[string]bool{}, known: map[string]entry{}, mine: map[string]bool{},
	}
	n.local.Store(&shaping.Memory{})
	if err := n.recover(); err != nil {
		n.log.Warn("cluster: Redis unreachable; shaping with node-local limits (each limit divided by cluster.expected_nodes) until it answers", "node", cfg.NodeName, "expected_nodes", cfg.ExpectedNodes, "err", err)
	} else {
		n.log.Info("cluster: shaping state shared through Redis", "node", cfg.NodeName, "redis", opts.Addr)
	}
	go n.loop()
	go n.flusher()
	return n, nil
}

// checkNodeName keeps node names to characters that are safe in keys and
// logs.
func checkNodeName(s string) error {
	if s == "" || len(s) > 128 {
		return fmt.Errorf("cluster: node name %q: want 1 to 128 characters", s)
	}
	for _, c := range s {
		if !(c == '-' || c == '_' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			return fmt.Errorf("cluster: node name %q: only letters, digits, '.', '-' and '_'", s)
		}
	}
	return nil
}

// Name is the node's name in Redis.
func (n *Node) Name() string { return n.cfg.NodeName }

// RedisUp reports whether shared limits are in force (Redis answered the
// last call). metrics exports it as relayq_cluster_redis_up.
func (n *Node) RedisUp() bool { return n.up.Load() }

// Close stops the background work and closes the Redis client. It does
// not release this node's connection counts: they expire with the lease,
// as a crashed node's do (the deliveries holding them end with it).
func (n *Node) Close() error {
	var err error
	n.once.Do(func() {
		close(n.stopped)
		<-n.done
		<-n.flushed
		n.sendReleases() // the last releases, so that the slots are free at once
		err = n.rdb.Close()
	})
	return err
}

// loop refreshes the view of suspensions, sends heartbeats and, while
// Redis is down, tries it again.
func (n *Node) loop() {
	defer close(n.done)
	tick := time.NewTicker(n.cfg.Refresh)
	defer tick.Stop()
	beat := n.cfg.LeaseTTL / 3
	var lastBeat, lastProbe time.Time
	for {
		select {
		case <-n.stopped:
			return
		case now := <-tick.C:
			switch {
			case !n.up.Load():
				if now.Sub(lastProbe) >= n.cfg.Probe {
					lastProbe = now
					if n.recover() == nil {
						lastBeat = now
						n.log.Info("cluster: Redis reachable again; shared shaping limits resume", "node", n.cfg.NodeName)
					}
				}
			case now.Sub(lastBeat) >= beat:
				lastBeat = now
				if err := n.heartbeat(); err != nil {
					n.down(err)
				}
			default:
				if err := n.refresh(); err != nil {
					n.down(err)
				}
			}
		}
	}
}

// recover makes Redis agree with this node again after start or an
// outage: its connection counts, the suspensions it began meanwhile, and
// its view of everyone's suspensions. Only then are shared limits used.
func (n *Node) recover() error {
	if err := n.heartbeat(); err != nil {
		return err
	}
	if err := n.pushPending(); err != nil {
		return err
	}
	if err := n.reload(); err != nil {
		return err
	}
	if err := n.reloadPaces(); err != nil {
		return err
	}
	n.up.Store(true)
	return nil
}

// down switches to node-local limits after a failed call; it logs once
// per outage.
func (n *Node) down(err error) {
	if !n.up.CompareAndSwap(true, false) {
		return
	}
	n.local.Store(&shaping.Memory{})
	n.log.Warn("cluster: Redis unreachable; shaping with node-local limits (each limit divided by cluster.expected_nodes) until it answers", "node", n.cfg.NodeName, "expected_nodes", n.cfg.ExpectedNodes, "err", err)
}

// ctx bounds one Redis call.
func (n *Node) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), n.cfg.Timeout)
}

// heartbeat marks the node alive and rewrites its connection counts from
// the exact local ones. When the suspensions' version in Redis went back,
// Redis lost its data (restarted without persistence): the suspensions
// this node began and that are still in force are sent again.
func (n *Node) heartbeat() error {
	n.pub.Lock()
	n.hmu.Lock()
	args := []any{n.prefix, n.cfg.NodeName, n.cfg.LeaseTTL.Milliseconds()}
	for k, c := range n.held {
		args = append(args, k, c)
	}
	clear(n.released) // the counts written here already leave them out
	for k := range n.granted {
		if n.held[k] == 0 {
			delete(n.granted, k)
		}
	}
	n.hmu.Unlock()
	ctx, cancel := n.ctx()
	ver, err := heartbeatScript.Run(ctx, n.rdb, nil, args...).Int64()
	cancel()
	n.pub.Unlock()
	if err != nil {
		return fmt.Errorf("cluster: heartbeat: %w", err)
	}
	n.sus.mu.RLock()
	lost := ver < n.sus.snapVer
	n.sus.mu.RUnlock()
	if lost {
		return n.pushMine()
	}
	return nil
}

// Take implements shaping.State: from the node's cache of reserved tokens
// or through Redis (tokens.go), or with every interval multiplied by the
// expected number of nodes while Redis is down.
func (n *Node) Take(now time.Time, buckets []shaping.Bucket) (bool, int, time.Time) {
	if n.up.Load() {
		ok, last, next, err := n.takeCached(now, buckets)
		if err == nil {
			return ok, last, next
		}
		n.down(err)
	}
	scaled := make([]shaping.Bucket, len(buckets))
	for i, b := range buckets {
		scaled[i] = shaping.Bucket{Key: b.Key, Interval: b.Interval * time.Duration(n.cfg.ExpectedNodes)}
	}
	return n.local.Load().Take(now, scaled)
}

// takeCached spends cached tokens when every bucket has one, else asks
// Redis for the others, reserving a batch of each.
func (n *Node) takeCached(now time.Time, buckets []shaping.Bucket) (bool, int, time.Time, error) {
	n.tok.mu.Lock()
	defer n.tok.mu.Unlock()
	if n.tok.take(now, buckets) {
		return true, -1, time.Time{}, nil
	}
	ks := n.tok.sizes(now, buckets)
	if wait, last, next := n.tok.waiting(now, buckets, ks); wait {
		return false, last, next, nil
	}
	ok, last, next, err := n.takeShared(now, buckets, ks)
	switch {
	case err != nil:
		n.tok.reset() // node-local limits now; the cache starts afresh after
	case ok:
		n.tok.took(now, buckets, ks)
	default:
		n.tok.refused(buckets, last, next)
	}
	return ok, last, next, err
}

// takeShared reserves ks[i] tokens of bucket i (0: none, the node has one
// cached) in one script, all or nothing.
func (n *Node) takeShared(now time.Time, buckets []shaping.Bucket, ks []int) (bool, int, time.Time, error) {
	args := make([]any, 0, 3+4*len(buckets))
	args = append(args, n.prefix, now.UnixMicro(), len(buckets))
	for i, b := range buckets {
		args = append(args, b.Key, int64((b.Interval+time.Microsecond-1)/time.Microsecond), ks[i],
			int64(shaping.Tolerance(b.Interval)/time.Microsecond))
	}
	ctx, cancel := n.ctx()
	defer cancel()
	res, err := takeScript.Run(ctx, n.rdb, nil, args...).Int64Slice()
	if err != nil {
		return false, 0, time.Time{}, fmt.Errorf("cluster: take: %w", err)
	}
	if len(res) == 3 && res[0] == 0 {
		return false, int(res[1]) - 1, time.UnixMicro(res[2]).UTC(), nil
	}
	if len(res) != 1 || res[0] != 1 {
		return false, 0, time.Time{}, fmt.Errorf("cluster: take: unexpected reply %v", res)
	}
	return true, -1, time.Time{}, nil
}

// Acquire implements shaping.State: against the sum of every node's
// counts (with no Redis call when the node takes back a connection it
// released a moment ago: reuse), or against this node's own count and
// each limit divided by the expected number of nodes (at least 1) while
// Redis is down.
func (n *Node) Acquire(slots []shaping.Slot) (bool, int) {
	if n.up.Load() {
		if n.reuse(slots) {
			return true, -1
		}
		n.pub.RLock()
		ok, full, err := n.acquireShared(slots)
		if err == nil && ok {
			n.count(slotKeys(slots), 1, false)
			n.grant(slots)
		}
		n.pub.RUnlock()
		if err == nil {
			return ok, full
		}
		n.down(err)
	}
	n.pub.RLock() // a heartbeat publishing the counts sees this one or comes after
	defer n.pub.RUnlock()
	n.hmu.Lock()
	defer n.hmu.Unlock()
	for i, s := range slots {
		if s.Max > 0 && n.held[s.Key] >= max(1, s.Max/n.cfg.ExpectedNodes) {
			return false, i
		}
	}
	for _, s := range slots {
		n.held[s.Key]++
	}
	return true, -1
}

// acquireShared counts one connection in every slot through Redis. The
// releases of these scopes still queued for the flusher go in the same
// call, first; when a refusal may be stale because a flush of this node's
// releases of those scopes is on its way, it asks once more after that
// flush. So a node that gives a connection back and asks for one again is
// never refused on its own stale count.
func (n *Node) acquireShared(slots []shaping.Slot) (bool, int, error) {
	for try := 0; ; try++ {
		args, sending := n.acquireArgs(slots)
		ctx, cancel := n.ctx()
		full, err := acquireScript.Run(ctx, n.rdb, nil, args...).Int()
		cancel()
		switch {
		case err != nil:
			return false, 0, fmt.Errorf("cluster: acquire: %w", err)
		case full == 0:
			return true, -1, nil
		case sending == nil || try > 0:
			return false, full - 1, nil
		}
		t := time.NewTimer(n.cfg.Timeout) // the flush's own call is bounded so
		select {
		case <-sending:
		case <-t.C:
		}
		t.Stop()
	}
}

// acquireArgs takes the queued releases of the slots' scopes into the
// script's arguments; sending is closed when a flush carrying releases of
// those scopes ends (nil when none is on its way).
func (n *Node) acquireArgs(slots []shaping.Slot) (args []any, sending chan struct{}) {
	args = make([]any, 0, 4+3*len(slots))
	args = append(args, n.prefix, n.cfg.NodeName, n.cfg.LeaseTTL.Milliseconds(), len(slots))
	n.hmu.Lock()
	defer n.hmu.Unlock()
	for _, s := range slots {
		args = append(args, s.Key, s.Max, n.released[s.Key])
		delete(n.released, s.Key)
		if n.sending[s.Key] {
			sending = n.sent
		}
	}
	return args, sending
}

// count adds d to this node's connections of each key; with send, the
// releases (d < 0) are queued for the flusher too.
func (n *Node) count(keys []string, d int, send bool) {
	n.hmu.Lock()
	for _, k := range keys {
		if c := n.held[k] + d; c > 0 {
			n.held[k] = c
		} else {
			delete(n.held, k)
		}
		if send {
			n.released[k] -= d
		}
	}
	n.hmu.Unlock()
}

// grant notes the limits under which Redis counted a connection in slots.
func (n *Node) grant(slots []shaping.Slot) {
	n.hmu.Lock()
	for _, s := range slots {
		n.granted[s.Key] = s.Max
	}
	n.hmu.Unlock()
}

// Held returns the connections this node counts for a scope key.
func (n *Node) Held(key string) int {
	n.hmu.Lock()
	defer n.hmu.Unlock()
	return n.held[key]
}

func slotKeys(slots []shaping.Slot) []string {
	keys := make([]string, len(slots))
	for i, s := range slots {
		keys[i] = s.Key
	}
	return keys
}

// isNil reports a missing value, which is not a failure.
func isNil(err error) bool { return errors.Is(err, redis.Nil) }

// redisLog sends go-redis's own messages (a failed dial, once per probe
// while Redis is down) to the debug level of the latest node's logger:
// the node logs an outage itself, once.
type redisLog struct{}

var redisLogger atomic.Pointer[slog.Logger]

func setRedisLogger(l *slog.Logger) {
	if redisLogger.Swap(l) == nil {
		redis.SetLogger(redisLog{})
	}
}

func (redisLog) Printf(ctx context.Context, format string, v ...any) {
	if l := redisLogger.Load(); l != nil {
		l.Debug("cluster: redis client: " + fmt.Sprintf(format, v...))
	}
}
