package cluster

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/suppression"
)

// Suppressions is the suppression list shared by the nodes through Redis:
// a suppression.Store over the node's own (the queue file), which stays
// the list every RCPT is checked against, so acceptance never waits on
// Redis. Changes made here (the admin API, CLI import) and the bounces
// the local store reports (Auto) are written locally at once and sent to
// Redis by a background loop, which also copies the other nodes' changes
// into the local store within about Config.Refresh. While Redis is down
// the changes wait in memory and go when it answers again; then the local
// list and Redis are merged: the later of an addition and a removal of an
// address wins (an entry's Since against the removal's time). A removal
// made while Redis is down is forgotten if the node restarts before Redis
// answers: the address then stays suppressed (the safe side).
//
// Keys under the prefix P: P sup (hash address -> JSON entry), P sup:since
// (hash address -> its Since, µs), P sup:gone (hash address -> time of its
// removal, µs), P sup:version (counter bumped by every change), P
// sup:epoch (a random name: a new one means Redis lost the list). A node
// reads the whole list when the version moves: fine for lists of some
// tens of thousands of addresses changing a few times a second.
type Suppressions struct {
	n     *Node
	local suppression.Store
	clock clock.Clock

	mu      sync.Mutex
	pending map[string]supChange // by address, not yet in Redis
	ver     int64                // Redis's version last copied; -1: merge
	epoch   string               // Redis's epoch of that version
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	failing bool // the last round failed (loop goroutine only)
}

// supChange is an addition (entry set) or a removal (at) not yet sent.
type supChange struct {
	entry *suppression.Entry
	at    time.Time
}

var _ suppression.Store = (*Suppressions)(nil)

// NewSuppressions shares local through n's Redis until Close; clk is the
// clock of additions and removals (nil: clock.Real).
func NewSuppressions(n *Node, local suppression.Store, clk clock.Clock) *Suppressions {
	if clk == nil {
		clk = clock.Real
	}
	s := &Suppressions{n: n, local: local, clock: clk, pending: map[string]supChange{}, ver: -1,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

// Close stops the loop after one last try to send what is pending.
func (s *Suppressions) Close() error {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
	})
	return nil
}

// Suppressed implements suppression.Store from the local list.
func (s *Suppressions) Get(addr string) (suppression.Entry, bool, error) {
	return s.local.Get(addr)
}

// Suppressions implements suppression.Store from the local list.
func (s *Suppressions) List() ([]suppression.Entry, error) { return s.local.List() }

// Suppress implements suppression.Store: locally, then to Redis.
func (s *Suppressions) Add(entries ...suppression.Entry) error {
	now := s.clock.Now()
	for i := range entries {
		if entries[i].Since.IsZero() {
			entries[i].Since = now // the same time on every node
		}
	}
	if err := s.local.Add(entries...); err != nil {
		return err
	}
	for _, e := range entries {
		s.Auto(e)
	}
	return nil
}

// Unsuppress implements suppression.Store: locally, then in Redis.
func (s *Suppressions) Remove(addr string) (bool, error) {
	found, err := s.local.Remove(addr)
	if err != nil {
		return found, err
	}
	s.queue(suppression.Key(addr), supChange{at: s.clock.Now()})
	return found, nil
}

// Auto queues for Redis an entry the local store added itself (a bounce):
// queue.Suppressions.SetAutoHook. It never blocks.
func (s *Suppressions) Auto(e suppression.Entry) {
	e.Address = suppression.Key(e.Address)
	s.queue(e.Key(), supChange{entry: &e}) // a scope's entry apart from the global one
}

func (s *Suppressions) queue(addr string, c supChange) {
	s.mu.Lock()
	s.pending[addr] = c
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// loop sends pending changes and copies Redis's list into the local one.
func (s *Suppressions) loop() {
	defer close(s.done)
	t := time.NewTicker(s.n.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			s.sync()
			return
		case <-s.kick:
		case <-t.C:
		}
		s.sync()
	}
}

// sync does one round while Redis is up: send the pending changes, then,
// when Redis's version moved, copy the list (a merge after start, an
// outage, a failed round or a Redis that lost its data). A failed call
// does not switch shaping to node-local limits (shaping's own calls judge
// Redis): the round is tried again at the next tick, and logged once.
func (s *Suppressions) sync() {
	if !s.n.up.Load() {
		s.mu.Lock()
		s.ver = -1
		s.mu.Unlock()
		return
	}
	err := s.round()
	if err != nil {
		s.mu.Lock()
		s.ver = -1
		s.mu.Unlock()
	}
	switch {
	case err != nil && !s.failing:
		s.failing = true
		s.n.log.Warn("cluster: suppression list: a Redis call failed; changes made here wait and the lists are merged when it succeeds", "node", s.n.cfg.NodeName, "err", err)
	case err == nil && s.failing:
		s.failing = false
		s.n.log.Info("cluster: suppression list shared again", "node", s.n.cfg.NodeName)
	}
}

func (s *Suppressions) round() error {
	if err := s.push(); err != nil {
		return err
	}
	ver, epoch, err := s.version()
	if err != nil {
		return err
	}
	s.mu.Lock()
	merge, changed := s.ver < 0 || epoch != s.epoch || ver < s.ver, ver != s.ver
	s.mu.Unlock()
	if !changed && !merge {
		return nil
	}
	if err := s.copy(merge); err != nil {
		return err
	}
	s.mu.Lock()
	s.epoch = epoch
	s.mu.Unlock()
	return nil
}

// version reads the list's version and epoch: a random name the first
// node to look sets, so that a Redis that lost its data (restarted
// without persistence faster than any node noticed) is told apart from
// one whose version merely went back to the same number.
func (s *Suppressions) version() (int64, string, error) {
	ctx, cancel := s.n.ctx()
	defer cancel()
	vals, err := s.n.rdb.MGet(ctx, s.n.prefix+"sup:version", s.n.prefix+"sup:epoch").Result()
	if err != nil {
		return 0, "", fmt.Errorf("cluster: suppressions: %w", err)
	}
	var ver int64
	if v, ok := vals[0].(string); ok {
		ver, _ = strconv.ParseInt(v, 10, 64)
	}
	if e, ok := vals[1].(string); ok {
		return ver, e, nil
	}
	e := strconv.FormatUint(rand.Uint64(), 36)
	if err := s.n.rdb.SetNX(ctx, s.n.prefix+"sup:epoch", e, 0).Err(); err != nil {
		return 0, "", fmt.Errorf("cluster: suppressions: %w", err)
	}
	e, err = s.n.rdb.Get(ctx, s.n.prefix+"sup:epoch").Result()
	if err != nil {
		return 0, "", fmt.Errorf("cluster: suppressions: %w", err)
	}
	return ver, e, nil
}

// supChunk bounds the changes sent in one script, so that a large import
// does not run into the call's timeout.
const supChunk = 500

// push sends the pending changes, up to supChunk per script; on failure
// the unsent ones stay pending (unless a newer change of the address came
// meanwhile).
func (s *Suppressions) push() error {
	for {
		s.mu.Lock()
		if len(s.pending) == 0 {
			s.mu.Unlock()
			return nil
		}
		batch := make(map[string]supChange, min(len(s.pending), supChunk))
		for addr, c := range s.pending {
			if len(batch) == supChunk {
				break
			}
			batch[addr] = c
			delete(s.pending, addr)
		}
		s.mu.Unlock()
		if err := s.send(batch); err != nil {
			return err
		}
	}
}

// send sends one batch of changes in one script.
func (s *Suppressions) send(batch map[string]supChange) error {
	args := make([]any, 0, 1+4*len(batch))
	args = append(args, s.n.prefix)
	for addr, c := range batch {
		if c.entry == nil {
			args = append(args, "-", addr, c.at.UnixMicro(), "")
			continue
		}
		js, err := json.Marshal(c.entry)
		if err != nil {
			continue // cannot happen: plain strings and a time
		}
		args = append(args, "+", addr, c.entry.Since.UnixMicro(), string(js))
	}
	ctx, cancel := s.n.ctx()
	err := supChangeScript.Run(ctx, s.n.rdb, nil, args...).Err()
	cancel()
	if err != nil {
		s.mu.Lock()
		for addr, c := range batch {
			if _, newer := s.pending[addr]; !newer {
				s.pending[addr] = c
			}
		}
		s.mu.Unlock()
		return fmt.Errorf("cluster: suppressions: send: %w", err)
	}
	return nil
}

// copy makes the local list follow Redis's: entries added there are added
// here, entries removed there are removed here, unless this node has a
// later change of the address (then, with merge, that is sent). With
// merge, local entries Redis never had are sent too. The local list is
// read once (one read transaction), and written only where it differs.
func (s *Suppressions) copy(merge bool) error {
	v, all, gone, err := s.load()
	if err != nil {
		return err
	}
	list, err := s.local.List()
	if err != nil {
		return fmt.Errorf("cluster: suppressions: %w", err)
	}
	mine := make(map[string]suppression.Entry, len(list))
	for _, l := range list {
		mine[suppression.Key(l.Address)] = l
	}
	s.mu.Lock()
	busy := make(map[string]bool, len(s.pending)) // changes of ours not sent yet win
	for a := range s.pending {
		busy[a] = true
	}
	s.mu.Unlock()
	var add []suppression.Entry
	for addr, e := range all {
		l, ok := mine[addr]
		switch {
		case busy[addr]:
		case !ok || l.Since.Before(e.Since):
			add = append(add, e)
		case merge && l.Since.After(e.Since):
			s.Auto(l)
		}
	}
	if len(add) > 0 {
		if err := s.local.Add(add...); err != nil {
			return fmt.Errorf("cluster: suppressions: copy: %w", err)
		}
	}
	for addr, at := range gone {
		l, ok := mine[addr]
		switch {
		case !ok || busy[addr]:
		case !l.Since.After(at):
			if _, err := s.local.Remove(addr); err != nil {
				return fmt.Errorf("cluster: suppressions: copy: %w", err)
			}
		case merge:
			s.Auto(l)
		}
	}
	if merge {
		for addr, l := range mine {
			_, there := all[addr]
			_, removed := gone[addr]
			if !there && !removed && !busy[addr] {
				s.Auto(l)
			}
		}
	}
	s.mu.Lock()
	s.ver = v
	s.mu.Unlock()
	return nil
}

// load reads Redis's list in one transaction: its version, the entries
// and the removals by address (junk skipped).
func (s *Suppressions) load() (int64, map[string]suppression.Entry, map[string]time.Time, error) {
	ctx, cancel := s.n.ctx()
	defer cancel()
	var ver *redis.StringCmd
	var all, gone *redis.MapStringStringCmd
	_, err := s.n.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		ver = p.Get(ctx, s.n.prefix+"sup:version")
		all = p.HGetAll(ctx, s.n.prefix+"sup")
		gone = p.HGetAll(ctx, s.n.prefix+"sup:gone")
		return nil
	})
	if err != nil && !isNil(err) {
		return 0, nil, nil, fmt.Errorf("cluster: suppressions: load: %w", err)
	}
	v, _ := ver.Int64() // none yet: 0
	entries := make(map[string]suppression.Entry, len(all.Val()))
	for addr, js := range all.Val() {
		var e suppression.Entry
		if json.Unmarshal([]byte(js), &e) == nil {
			entries[addr] = e
		}
	}
	removed := make(map[string]time.Time, len(gone.Val()))
	for addr, us := range gone.Val() {
		if at, err := strconv.ParseInt(us, 10, 64); err == nil {
			removed[addr] = time.UnixMicro(at)
		}
	}
	return v, entries, removed, nil
}
