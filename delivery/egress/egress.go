package egress

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"

	"github.com/relayq/relayq/internal/identity"
)

// Source is one local address relayq sends from.
type Source struct {
	// Name is the operator's name for it: in events, history, metrics
	// and shaping scopes.
	Name string
	// Addr is the local address connections are bound to.
	Addr netip.Addr
	// EHLO is the name said in EHLO from this address; its A/AAAA record
	// should be Addr and Addr's PTR should name it back.
	EHLO string
	// Warmup, when set, caps what the source sends to each destination
	// scope per day (warmup.go); nil is a warm source.
	Warmup *Warmup
}

// Member is a source in a pool with its weight, the share of the pool's
// new connections it gets.
type Member struct {
	Source string
	Weight int
}

// PoolConfig is one configured pool.
type PoolConfig struct {
	Name    string
	Members []Member
}

// Config is delivery.egress, with the pools the streams and credentials
// name (streams[].pool; pool: on api_keys and users).
type Config struct {
	Sources     []Source
	Pools       []PoolConfig
	DefaultPool string
	// Streams maps a stream's name to its pool's.
	Streams map[string]string
	// Credentials maps a credential to its pool's name.
	Credentials map[identity.Credential]string
}

// Enabled reports whether c configures any source: without one, relayq
// sends as before egress existed.
func (c Config) Enabled() bool { return len(c.Sources) > 0 }

// Pool is a weighted set of sources, with the count of what each carried.
type Pool struct {
	Name    string
	sources []*Source
	weights []int

	mu sync.Mutex
	// finish is each source's virtual finish time: a connection from a
	// source of weight w takes 1/w of virtual time, from its start, the
	// later of the source's finish and now; the next connection goes to
	// the allowed source that starts first (start-time fair queueing). So
	// shares follow the weights over any stretch of connections, not only
	// on average, and a source that was not allowed for a while starts
	// again at now, without a burst to catch up.
	finish []float64
	now    float64 // the start of the last connection counted
	phased bool    // finish has its random start
}

// Sources returns the pool's sources in configured order with their
// weights.
func (p *Pool) Sources() ([]*Source, []int) { return p.sources, p.weights }

// Pick returns the source the next new connection should come from: by
// weight, among those allowed accepts (nil accepts all); nil when none is
// allowed. It counts nothing: Used counts the connection once it is made,
// so sources tried and refused do not lose their turn. r gives the
// pool's random start (so nodes sharing providers do not all start on the
// same source) and breaks ties.
func (p *Pool) Pick(r *rand.Rand, allowed func(*Source) bool) *Source {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.phased {
		for i, w := range p.weights {
			p.finish[i] = r.Float64() / float64(w)
		}
		p.phased = true
	}
	best, ties := -1, 0
	var bestStart float64
	for i, s := range p.sources {
		if allowed != nil && !allowed(s) {
			continue
		}
		start := max(p.finish[i], p.now)
		switch {
		case best < 0 || start < bestStart:
			best, bestStart, ties = i, start, 1
		case start == bestStart:
			if ties++; r.IntN(ties) == 0 {
				best = i
			}
		}
	}
	if best < 0 {
		return nil
	}
	return p.sources[best]
}

// Used counts a connection made from s (one Pick returned).
func (p *Pool) Used(s *Source) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.sources {
		if x == s {
			start := max(p.finish[i], p.now)
			p.finish[i], p.now = start+1/float64(p.weights[i]), start
			return
		}
	}
}

// Resolver chooses a message's pool. A nil Resolver is no egress.
type Resolver struct {
	sources     []*Source
	pools       map[string]*Pool
	streams     map[string]*Pool
	credentials map[identity.Credential]*Pool
	def         *Pool
}

// New checks c and builds its Resolver; nil without sources. The error
// names the pool, source or stream at fault; config wraps it with the key
// and the file.
func New(c Config) (*Resolver, error) {
	if !c.Enabled() {
		return nil, nil
	}
	r := &Resolver{pools: map[string]*Pool{}, streams: map[string]*Pool{}, credentials: map[identity.Credential]*Pool{}}
	byName := map[string]*Source{}
	for i := range c.Sources {
		s := c.Sources[i]
		if s.Name == "" || byName[s.Name] != nil {
			return nil, fmt.Errorf("source %q: a source needs a name of its own", s.Name)
		}
		if !s.Addr.IsValid() {
			return nil, fmt.Errorf("source %q: no address", s.Name)
		}
		byName[s.Name] = &s
		r.sources = append(r.sources, &s)
	}
	for _, pc := range c.Pools {
		p, err := newPool(pc, byName)
		if err != nil {
			return nil, err
		}
		if r.pools[p.Name] != nil {
			return nil, fmt.Errorf("pool %q is listed twice", p.Name)
		}
		r.pools[p.Name] = p
	}
	if c.DefaultPool == "" {
		if len(c.Pools) > 0 {
			return nil, errors.New("default_pool: pools are listed, so name the one for mail no stream or credential places")
		}
		// Sources without pools: one pool of them all, equal weights.
		pc := PoolConfig{Name: "default"}
		for _, s := range c.Sources {
			pc.Members = append(pc.Members, Member{Source: s.Name, Weight: 1})
		}
		p, _ := newPool(pc, byName)
		r.pools[p.Name], c.DefaultPool = p, p.Name
	}
	if r.def = r.pools[c.DefaultPool]; r.def == nil {
		return nil, fmt.Errorf("default_pool: %q is not a pool listed under pools", c.DefaultPool)
	}
	for stream, name := range c.Streams {
		if r.streams[stream] = r.pools[name]; r.streams[stream] == nil {
			return nil, fmt.Errorf("stream %q names pool %q, which pools does not list", stream, name)
		}
	}
	for cred, name := range c.Credentials {
		if r.credentials[cred] = r.pools[name]; r.credentials[cred] == nil {
			return nil, fmt.Errorf("%s names pool %q, which pools does not list", cred, name)
		}
	}
	return r, nil
}

func newPool(pc PoolConfig, byName map[string]*Source) (*Pool, error) {
	p := &Pool{Name: pc.Name}
	if pc.Name == "" {
		return nil, errors.New("a pool needs a name")
	}
	if len(pc.Members) == 0 {
		return nil, fmt.Errorf("pool %q has no source", pc.Name)
	}
	seen := map[string]bool{}
	for _, m := range pc.Members {
		s := byName[m.Source]
		switch {
		case s == nil:
			return nil, fmt.Errorf("pool %q: source %q is not listed under sources", pc.Name, m.Source)
		case seen[m.Source]:
			return nil, fmt.Errorf("pool %q: source %q is listed twice", pc.Name, m.Source)
		case m.Weight < 1:
			return nil, fmt.Errorf("pool %q: source %q has weight %d; a weight is a share, at least 1", pc.Name, m.Source, m.Weight)
		}
		seen[m.Source] = true
		p.sources, p.weights = append(p.sources, s), append(p.weights, m.Weight)
	}
	p.finish = make([]float64, len(p.sources))
	return p, nil
}

// Pool is the pool of mail sent by s: its stream's, else its
// credential's, else the default pool. Nil for a nil Resolver.
func (r *Resolver) Pool(s identity.Sender) *Pool {
	if r == nil {
		return nil
	}
	if p := r.streams[s.Stream]; p != nil {
		return p
	}
	if s.Credential.Authenticated() {
		if p := r.credentials[identity.Credential{Kind: s.Credential.Kind, Name: s.Credential.Name}]; p != nil {
			return p
		}
	}
	return r.def
}

// Sources returns every configured source in order; nil for a nil
// Resolver.
func (r *Resolver) Sources() []*Source {
	if r == nil {
		return nil
	}
	return r.sources
}
