package cluster

import "fmt"

// Release implements shaping.State. The node's own count drops at once
// (its share while Redis is down, and what the next heartbeat writes);
// Redis hears of it from a background flusher, which sends every release
// queued meanwhile in one call, so a delivery worker never waits on Redis
// to give a connection back. Until then the slot still counts as taken on
// the other nodes: a few milliseconds at most, and never the other way.
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
