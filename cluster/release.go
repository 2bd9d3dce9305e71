package cluster

import (
	"fmt"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
)

// Release implements shaping.State. The node's own count drops at once
// (its share while Redis is down, and what the next heartbeat writes);
// Redis hears of it from a background flusher, Config.ReleaseDelay later,
// which sends every release queued meanwhile in one call, so a delivery
// worker never waits on Redis to give a connection back, and a connection
// the node asks for meanwhile takes a queued release back with no call
// (Acquire). Until then the slot still counts as taken on the other nodes:
// ReleaseDelay and one call at most, and never the other way.
func (n *Node) Release(keys []string) {
	n.pub.RLock()
	up := n.up.Load()
	n.count(keys, -1, up)
	n.pub.RUnlock()
	if up {
		select {
		case n.flush <- struct{}{}:
		default: // a flush is due already and will take these too
		}
	}
}

// flusher sends queued releases until Close.
func (n *Node) flusher() {
	defer close(n.flushed)
	for {
		select {
		case <-n.stopped:
			return
		case <-n.flush:
			t := time.NewTimer(n.cfg.ReleaseDelay)
			select {
			case <-n.stopped: // Close sends them
				t.Stop()
				return
			case <-t.C:
			}
			n.sendReleases()
		}
	}
}

// sendReleases sends the queued releases in one call. While Redis is down
// they are dropped: the heartbeat that ends the outage writes the exact
// counts.
func (n *Node) sendReleases() {
	n.pub.RLock()
	defer n.pub.RUnlock()
	n.hmu.Lock()
	if len(n.released) == 0 {
		n.hmu.Unlock()
		return
	}
	args := make([]any, 0, 3+2*len(n.released))
	args = append(args, n.prefix, n.cfg.NodeName, n.cfg.LeaseTTL.Milliseconds())
	n.sending, n.sent = make(map[string]bool, len(n.released)), make(chan struct{})
	for k, c := range n.released {
		args = append(args, k, c)
		n.sending[k] = true
	}
	clear(n.released)
	n.hmu.Unlock()
	var err error
	if n.up.Load() {
		ctx, cancel := n.ctx()
		err = releaseScript.Run(ctx, n.rdb, nil, args...).Err()
		cancel()
	}
	n.hmu.Lock()
	close(n.sent)
	n.sending, n.sent = nil, nil
	n.hmu.Unlock()
	if err != nil {
		// The heartbeat after the outage rewrites the counts.
		n.down(fmt.Errorf("cluster: release: %w", err))
	}
}

// reuse counts one more connection of this node in every slot by taking
// back one of its releases not sent to Redis yet, when every slot has one
// and its limit is the one Redis last granted the node a slot under. Redis
// still counts those releases as connections, so taking them back changes
// no total there and needs no call. A changed limit (a throttle halves
// it, a reload) goes to Redis, which checks the total against it.
func (n *Node) reuse(slots []shaping.Slot) bool {
	n.hmu.Lock()
	defer n.hmu.Unlock()
	for _, s := range slots {
		if n.released[s.Key] <= 0 || (s.Max > 0 && n.granted[s.Key] != s.Max) {
			return false
		}
	}
	for _, s := range slots {
		if c := n.released[s.Key] - 1; c > 0 {
			n.released[s.Key] = c
		} else {
			delete(n.released, s.Key)
		}
		n.held[s.Key]++
	}
	return true
}
