package cluster

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/relayq/relayq/delivery/shaping"
)

// Learned rates (adaptive pacing) in Redis: one record per scope for the
// whole cluster, so that every node paces a scope at the same rate and a
// signal on one lowers it for all. The record holds the interval as of
// its last change and the time of that change (with the rate a quick way
// back leads to, Peak, if any); the steps up follow by
// arithmetic (shaping.Adaptive), so a record is written once per
// decrease, pin or unpin, never per step.
//
// Keys under the prefix P:
//
//	P paces          hash SCOPE -> JSON shaping.Pace
//	P paces:version  counter bumped by every change to paces
//
// Reads come from the node's view, reloaded within Config.Refresh of a
// change (Admit costs no Redis call). A change is one script that
// writes only if the record is still the one the node based it on
// (swapPaceScript), so two nodes' decreases from one burst count once
// (the loser sees the winner's record, within hold, and stops). While
// Redis is down the node changes its own view only (its Take divides
// every rate by expected_nodes as for configured ones); the view is
// replaced by Redis's when Redis answers again.

var _ shaping.PaceState = (*Node)(nil)

// paceView is the node's copy of the learned rates: each record with the
// JSON it is stored as (for the compare of a swap).
type paceView struct {
	mu   sync.RWMutex
	recs map[string]paceRec
	ver  int64
}

type paceRec struct {
	p   shaping.Pace
	raw string
}

// swapPaceScript: ARGV prefix, scope, the JSON expected ("" for none), the
// new JSON. Stores the new record if the stored one is the expected;
// returns {1, version} or {0, the stored JSON or ""}.
var swapPaceScript = redis.NewScript(`
local p, scope = ARGV[1], ARGV[2]
local cur = redis.call('HGET', p .. 'paces', scope) or ''
if cur ~= ARGV[3] then return {0, cur} end
redis.call('HSET', p .. 'paces', scope, ARGV[4])
return {1, redis.call('INCR', p .. 'paces:version')}
`)

// dropPaceScript: ARGV prefix, scope. Returns 1 if there was a record.
var dropPaceScript = redis.NewScript(`
local p = ARGV[1]
if redis.call('HDEL', p .. 'paces', ARGV[2]) == 0 then return 0 end
redis.call('INCR', p .. 'paces:version')
return 1
`)

// Pace implements shaping.PaceState, from the node's view.
func (n *Node) Pace(key string) (shaping.Pace, bool) {
	n.paces.mu.RLock()
	defer n.paces.mu.RUnlock()
	r, ok := n.paces.recs[key]
	return r.p, ok
}

// Paces implements shaping.PaceState, from the node's view.
func (n *Node) Paces() []shaping.Pace {
	n.paces.mu.RLock()
	out := make([]shaping.Pace, 0, len(n.paces.recs))
	for _, r := range n.paces.recs {
		out = append(out, r.p)
	}
	n.paces.mu.RUnlock()
	shaping.SortPaces(out)
	return out
}

// SwapPace implements shaping.PaceState: in Redis, if the stored record
// is still old; while Redis is down, in the node's view.
//
// The view's lock is not held across the Redis call: Admit reads paces
// (Pace) for every attempt, and a slow Redis must not stall admission of
// every scope behind one scope's write. The script's compare keeps the
// swap atomic; the view only follows what Redis answered.
func (n *Node) SwapPace(key string, old *shaping.Pace, p shaping.Pace) bool {
	data, err := json.Marshal(p)
	if err != nil {
		return false
	}
	cur, ok := n.viewMatches(key, old)
	if !ok {
		return false
	}
	if n.up.Load() {
		swapped, stored, err := n.swapShared(key, cur.raw, string(data))
		if err == nil {
			n.paces.mu.Lock()
			defer n.paces.mu.Unlock()
			if !swapped {
				n.learnPace(key, stored) // the retry starts from what Redis holds
				return false
			}
			n.setPace(key, paceRec{p: p, raw: string(data)})
			return true
		}
		n.down(err)
	}
	// Redis down: the view is the record, so compare and set under one lock.
	n.paces.mu.Lock()
	defer n.paces.mu.Unlock()
	if cur, had := n.paces.recs[key]; had != (old != nil) || (had && !cur.p.Same(*old)) {
		return false
	}
	n.setPace(key, paceRec{p: p, raw: string(data)})
	return true
}

// viewMatches returns key's record in the view and whether it is old
// (nil: no record).
func (n *Node) viewMatches(key string, old *shaping.Pace) (paceRec, bool) {
	n.paces.mu.RLock()
	defer n.paces.mu.RUnlock()
	cur, had := n.paces.recs[key]
	return cur, had == (old != nil) && (!had || cur.p.Same(*old))
}

func (n *Node) swapShared(key, old, data string) (bool, string, error) {
	ctx, cancel := n.ctx()
	defer cancel()
	res, err := swapPaceScript.Run(ctx, n.rdb, nil, n.prefix, key, old, data).Slice()
	if err != nil || len(res) != 2 {
		return false, "", fmt.Errorf("cluster: learned rate: %v %v", err, res)
	}
	ok, _ := res[0].(int64)
	stored, _ := res[1].(string)
	return ok == 1, stored, nil
}

// DropPace implements shaping.PaceState. As in SwapPace, the Redis call
// runs without the view's lock.
func (n *Node) DropPace(key string) bool {
	n.paces.mu.RLock()
	_, had := n.paces.recs[key]
	n.paces.mu.RUnlock()
	if n.up.Load() {
		ctx, cancel := n.ctx()
		res, err := dropPaceScript.Run(ctx, n.rdb, nil, n.prefix, key).Int64()
		cancel()
		if err != nil {
			n.down(err)
		} else {
			had = had || res == 1
		}
	}
	n.paces.mu.Lock()
	delete(n.paces.recs, key)
	n.paces.mu.Unlock()
	return had
}

// learnPace puts a stored JSON record in the view ("" removes it). The
// caller holds the view's lock.
func (n *Node) learnPace(key, raw string) {
	if raw == "" {
		delete(n.paces.recs, key)
		return
	}
	var p shaping.Pace
	if err := json.Unmarshal([]byte(raw), &p); err != nil || p.Scope.String() != key || p.Interval <= 0 {
		return // not written by a node: left out
	}
	n.setPace(key, paceRec{p: p, raw: raw})
}

func (n *Node) setPace(key string, r paceRec) {
	if n.paces.recs == nil {
		n.paces.recs = map[string]paceRec{}
	}
	n.paces.recs[key] = r
}

// reloadPaces replaces the view with what Redis holds.
func (n *Node) reloadPaces() error {
	ctx, cancel := n.ctx()
	defer cancel()
	pipe := n.rdb.TxPipeline()
	verCmd := pipe.Get(ctx, n.prefix+"paces:version")
	allCmd := pipe.HGetAll(ctx, n.prefix+"paces")
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return fmt.Errorf("cluster: load learned rates: %w", err)
	}
	ver, _ := verCmd.Int64()
	all := allCmd.Val()
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n.paces.mu.Lock()
	defer n.paces.mu.Unlock()
	n.paces.recs, n.paces.ver = map[string]paceRec{}, ver
	for _, k := range keys {
		n.learnPace(k, all[k])
	}
	return nil
}

// ExpectedNodes is cluster.expected_nodes: a Shaper takes a scope's
// first learned rate as this node's delivery rate times it, the whole
// cluster's as far as one node can tell.
func (n *Node) ExpectedNodes() int { return n.cfg.ExpectedNodes }
