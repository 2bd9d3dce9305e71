package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relayq/relayq/internal/clock"
)

// ErrLeaseLost says another node holds the lease now: the queue is
// theirs, and this node writes nothing more to it.
var ErrLeaseLost = errors.New("queue lease taken by another node")

// HeldError is Leases.Acquire's answer when another node holds the lease
// of the queue (it adopted it).
type HeldError struct {
	Node  string
	Token uint64
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("queue lease held by node %s (token %d)", e.Node, e.Token)
}

// Leases takes and keeps the owner leases of queue files in Redis (see
// lease.go's Lease and leasescripts.go). Safe for concurrent use.
type Leases struct {
	cfg    Config
	rdb    *redis.Client
	clock  clock.Clock
	log    *slog.Logger
	prefix string
}

// NewLeases returns the leases of cfg's node (cfg.RedisURL set); nothing
// is asked of Redis until a lease is.
func NewLeases(cfg Config, clk clock.Clock, log *slog.Logger) (*Leases, error) {
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
	opts.PoolSize = 4
	if clk == nil {
		clk = clock.Real
	}
	if log == nil {
		log = slog.Default()
	}
	return &Leases{cfg: cfg, rdb: redis.NewClient(opts), clock: clk, log: log, prefix: Prefix}, nil
}

// Close closes the Redis client; leases still held lapse by themselves.
func (l *Leases) Close() error { return l.rdb.Close() }

// Node is the name leases are held under.
func (l *Leases) Node() string { return l.cfg.NodeName }

// TTL is how long a lease outlives its holder's last renewal.
func (l *Leases) TTL() time.Duration { return l.cfg.LeaseTTL }

func (l *Leases) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, l.cfg.Timeout)
}

func (l *Leases) micros(t time.Time) int64 { return t.UnixMicro() }

// Acquire takes the lease of this node's own queue (identity id, at path):
// a *HeldError if another node holds it, another error if Redis did not
// answer. floor is the newest token the file carries: the new one is above
// it even if Redis lost its keys.
func (l *Leases) Acquire(ctx context.Context, id, path string, floor uint64) (*Lease, error) {
	return l.take(ctx, leaseAcquireScript, id, path, kindOwn, floor)
}

// Adopt takes the lease of another node's queue if nobody has held it for
// after; nil, nil when not (yet).
func (l *Leases) Adopt(ctx context.Context, id, path string, after time.Duration) (*Lease, error) {
	ls, err := l.take(ctx, leaseAdoptScript, id, path, kindAdopted, uint64(after.Microseconds()))
	var held *HeldError
	if errors.As(err, &held) {
		return nil, nil
	}
	return ls, err
}

const (
	kindOwn     = "own"
	kindAdopted = "adopted"
)

func (l *Leases) take(parent context.Context, s *redis.Script, id, path, kind string, arg uint64) (*Lease, error) {
	ctx, cancel := l.ctx(parent)
	defer cancel()
	sent := l.clock.Now()
	res, err := s.Run(ctx, l.rdb, nil, l.prefix, id, l.cfg.NodeName, l.micros(sent), l.cfg.LeaseTTL.Milliseconds(), arg, path).Slice()
	if err != nil {
		return nil, fmt.Errorf("cluster: lease of queue %s: %w", id, err)
	}
	if len(res) != 3 {
		return nil, fmt.Errorf("cluster: lease of queue %s: unexpected reply %v", id, res)
	}
	ok, _ := res[0].(int64)
	node, _ := res[1].(string)
	tok, _ := res[2].(int64)
	if ok != 1 {
		return nil, &HeldError{Node: node, Token: uint64(tok)}
	}
	ls := &Lease{l: l, ID: id, Path: path, Token: uint64(tok), Adopted: kind == kindAdopted, lost: make(chan struct{}), release: make(chan struct{})}
	ls.fresh = sent.Add(l.fresh())
	return ls, nil
}

// fresh is how long after a renewal was sent the lease is trusted without
// asking Redis: half its TTL, so that a renewal every third of it keeps
// it fresh with one missed, and an owner paused or cut off longer asks
// Redis before its next write.
func (l *Leases) fresh() time.Duration { return l.cfg.LeaseTTL / 2 }

// Owner is one row of Owners: who holds a queue's lease.
type Owner struct {
	ID, Node, Path string
	Token          uint64
	Adopted        bool
}

// Owners lists the queues whose lease is held now, by identity.
func (l *Leases) Owners(parent context.Context) ([]Owner, error) {
	ctx, cancel := l.ctx(parent)
	defer cancel()
	all, err := l.rdb.HGetAll(ctx, l.prefix+"owners").Result()
	if err != nil {
		return nil, fmt.Errorf("cluster: list queue owners: %w", err)
	}
	var out []Owner
	for id, v := range all {
		f := strings.SplitN(v, " ", 4)
		if len(f) != 4 {
			continue
		}
		tok, _ := strconv.ParseUint(f[1], 10, 64)
		cur, err := l.rdb.Get(ctx, l.prefix+"own:"+id).Result()
		if err != nil || !strings.HasPrefix(cur, f[0]+" "+f[1]+" ") {
			continue // lapsed: its holder is gone
		}
		out = append(out, Owner{ID: id, Node: f[0], Token: tok, Adopted: f[2] == kindAdopted, Path: f[3]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// AskRelease asks the node that adopted queue id to let it go at its next
// renewal (within a third of the lease's TTL): its owner may then take it
// back. It returns the adopter's name, or "" if id is not held as adopted.
func (l *Leases) AskRelease(parent context.Context, id string) (string, error) {
	ctx, cancel := l.ctx(parent)
	defer cancel()
	n, err := leaseAskReleaseScript.Run(ctx, l.rdb, nil, l.prefix, id, l.cfg.NodeName, l.micros(l.clock.Now())).Text()
	if err != nil {
		return "", fmt.Errorf("cluster: release of queue %s: %w", id, err)
	}
	return n, nil
}

// Lease is one queue's owner lease held by this node. Check is the
// store's fence (queue.Options.Fence); Keep renews it until the context
// ends; Release lets it go.
type Lease struct {
	l       *Leases
	ID      string // the queue file's identity
	Path    string // where this node opened it
	Token   uint64 // the fencing token: raised by every takeover
	Adopted bool

	mu      sync.Mutex
	fresh   time.Time // trusted without asking Redis until then
	gone    bool
	lost    chan struct{} // closed when the lease is found taken
	release chan struct{} // closed when an operator asks for the queue's release
	asked   bool
}

// Lost is closed when the lease is found taken by another node.
func (ls *Lease) Lost() <-chan struct{} { return ls.lost }

// ReleaseAsked is closed when an operator asked for the release of this
// adopted queue (relayq queue release-adopted).
func (ls *Lease) ReleaseAsked() <-chan struct{} { return ls.release }

// Check is the fence of the queue opened under this lease, asked just
// before each commit: nil while the lease was renewed less than half its
// TTL ago (by the injected clock, monotonic in production); else it
// renews now and answers ErrLeaseLost if another node took it. A Redis
// that does not answer leaves the node writing its own queue, as without
// a cluster; an adopted queue is fenced then, since its owner may be back.
func (ls *Lease) Check() error {
	ls.mu.Lock()
	gone, fresh := ls.gone, ls.l.clock.Now().Before(ls.fresh)
	ls.mu.Unlock()
	if gone {
		return ErrLeaseLost
	}
	if fresh {
		return nil
	}
	err := ls.Renew(context.Background())
	if err != nil && !errors.Is(err, ErrLeaseLost) && !ls.Adopted {
		// Trusted for another half TTL, so that an outage costs one
		// timed-out call per half TTL, not one per commit.
		ls.mu.Lock()
		ls.fresh = ls.l.clock.Now().Add(ls.l.fresh())
		ls.mu.Unlock()
		return nil
	}
	return err
}

// Renew extends the lease: ErrLeaseLost if another node took it (for
// good: Lost is closed), another error if Redis did not answer.
func (ls *Lease) Renew(parent context.Context) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.gone {
		return ErrLeaseLost
	}
	l := ls.l
	ctx, cancel := l.ctx(parent)
	defer cancel()
	kind := kindOwn
	if ls.Adopted {
		kind = kindAdopted
	}
	sent := l.clock.Now()
	n, err := leaseRenewScript.Run(ctx, l.rdb, nil, l.prefix, ls.ID, l.cfg.NodeName, l.micros(sent), l.cfg.LeaseTTL.Milliseconds(), ls.Token, kind, ls.Path).Int()
	if err != nil {
		return fmt.Errorf("cluster: renew lease of queue %s: %w", ls.ID, err)
	}
	switch n {
	case 0:
		ls.gone = true
		close(ls.lost)
		l.log.Error("cluster: queue lease taken by another node; writing nothing more to it", "queue", ls.Path, "id", ls.ID, "token", ls.Token)
		return ErrLeaseLost
	case 2:
		if !ls.asked && ls.Adopted {
			ls.asked = true
			close(ls.release)
		}
	}
	ls.fresh = sent.Add(l.fresh())
	return nil
}

// Raise moves the lease to a token above floor, the newest the queue file
// carries: the counter in Redis was lost (restarted empty) while the file
// kept a higher token. ErrLeaseLost if the lease is no longer this node's.
func (ls *Lease) Raise(parent context.Context, floor uint64) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.gone {
		return ErrLeaseLost
	}
	l := ls.l
	ctx, cancel := l.ctx(parent)
	defer cancel()
	kind := kindOwn
	if ls.Adopted {
		kind = kindAdopted
	}
	tok, err := leaseRaiseScript.Run(ctx, l.rdb, nil, l.prefix, ls.ID, l.cfg.NodeName, l.micros(l.clock.Now()), l.cfg.LeaseTTL.Milliseconds(), ls.Token, floor, kind, ls.Path).Int64()
	if err != nil {
		return fmt.Errorf("cluster: raise lease of queue %s: %w", ls.ID, err)
	}
	if tok == 0 {
		return ErrLeaseLost
	}
	ls.Token = uint64(tok)
	return nil
}

// Keep renews the lease every third of its TTL until ctx ends or the
// lease is lost.
func (ls *Lease) Keep(ctx context.Context) {
	every := ls.l.cfg.LeaseTTL / 3
	for {
		t := ls.l.clock.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if err := ls.Renew(ctx); errors.Is(err, ErrLeaseLost) {
			return
		} else if err != nil {
			ls.l.log.Warn("cluster: could not renew a queue lease", "queue", ls.Path, "err", err)
		}
	}
}

// Release ends the lease if it is still this node's; empty says the queue
// was left with nothing to deliver, so no node adopts it again until its
// owner took it back. The Lease fences everything after (Check).
func (ls *Lease) Release(parent context.Context, empty bool) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.gone {
		return nil
	}
	ls.gone = true
	l := ls.l
	ctx, cancel := l.ctx(parent)
	defer cancel()
	e := "0"
	if empty {
		e = "1"
	}
	if err := leaseReleaseScript.Run(ctx, l.rdb, nil, l.prefix, ls.ID, l.cfg.NodeName, l.micros(l.clock.Now()), ls.Token, e).Err(); err != nil {
		return fmt.Errorf("cluster: release lease of queue %s: %w", ls.ID, err)
	}
	return nil
}
