package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
)

// The calls that read and write the suspensions in Redis, and keep this
// node's view of them and Redis in agreement after an outage.

// putShared stores e, or extends the entry of its scope and action in
// force at now; it returns whether e was stored, the entry stored and the
// suspensions' version after the change.
func (n *Node) putShared(now time.Time, e entry) (bool, entry, int64, error) {
	data, err := json.Marshal(e)
	if err != nil {
		return false, entry{}, 0, fmt.Errorf("cluster: put: %w", err)
	}
	ctx, cancel := n.ctx()
	defer cancel()
	res, err := putScript.Run(ctx, n.rdb, nil, n.prefix, member(e.Scope.String(), e.Action),
		now.UnixMicro(), e.Until.UnixMicro(), data, grace.Milliseconds()).Slice()
	if err != nil {
		return false, entry{}, 0, fmt.Errorf("cluster: put: %w", err)
	}
	if len(res) != 4 {
		return false, entry{}, 0, fmt.Errorf("cluster: put: unexpected reply %v", res)
	}
	stored, err := decodeEntry(res[1], res[2])
	if err != nil {
		return false, entry{}, 0, fmt.Errorf("cluster: put: %w", err)
	}
	created, _ := res[0].(int64)
	ver, _ := res[3].(int64)
	return created == 1, stored, ver, nil
}

// decodeEntry reads a stored entry; until is authoritative over the
// Until in data (an extension changes only until).
func decodeEntry(data, until any) (entry, error) {
	str, ok := data.(string)
	u, ok2 := until.(int64)
	if !ok || !ok2 {
		return entry{}, fmt.Errorf("stored entry %v %v is not data and a time", data, until)
	}
	var e entry
	if err := json.Unmarshal([]byte(str), &e); err != nil {
		return entry{}, fmt.Errorf("stored entry: %w", err)
	}
	if e.Scope.IsZero() || (e.Action != shaping.ActionSuspend && e.Action != shaping.ActionThrottle) {
		return entry{}, fmt.Errorf("stored entry %q is not a suspension or throttle of a scope", str)
	}
	e.Until = time.UnixMicro(u).UTC()
	return e, nil
}

// decodeEntries reads {member, until, data, ...}. An entry that does not
// decode, or is stored under another scope's member, is left out: it was
// not written by a node, and it must not stop the others from applying.
func decodeEntries(res []any) map[string]entry {
	out := make(map[string]entry, len(res)/3)
	for i := 0; i+2 < len(res); i += 3 {
		m, _ := res[i].(string)
		e, err := decodeEntry(res[i+2], res[i+1])
		if err != nil || member(e.Scope.String(), e.Action) != m {
			continue
		}
		out[m] = e
	}
	return out
}

func (n *Node) getShared(args []any) (map[string]entry, error) {
	ctx, cancel := n.ctx()
	defer cancel()
	res, err := getScript.Run(ctx, n.rdb, nil, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("cluster: read suspensions: %w", err)
	}
	return decodeEntries(res), nil
}

func (n *Node) removeShared(ms []string) (map[string]entry, int64, error) {
	args := []any{n.prefix}
	for _, m := range ms {
		args = append(args, m)
	}
	ctx, cancel := n.ctx()
	defer cancel()
	res, err := removeScript.Run(ctx, n.rdb, nil, args...).Slice()
	if err != nil || len(res) == 0 {
		return nil, 0, fmt.Errorf("cluster: remove: %w", err)
	}
	ver, _ := res[0].(int64)
	return decodeEntries(res[1:]), ver, nil
}

// refresh reloads what changed in Redis since this node's views were
// taken, the suspensions or the learned rates (paces.go): both versions in
// one round trip, which is all a refresh costs when nothing changed.
func (n *Node) refresh() error {
	ctx, cancel := n.ctx()
	defer cancel()
	vals, err := n.rdb.MGet(ctx, n.prefix+"sus:version", n.prefix+"paces:version").Result()
	if err != nil {
		return fmt.Errorf("cluster: refresh: %w", err)
	}
	sus, err1 := versionOf(vals[0])
	paces, err2 := versionOf(vals[1])
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("cluster: refresh: %w", err)
	}
	n.sus.mu.RLock()
	susSame := sus == n.sus.snapVer
	n.sus.mu.RUnlock()
	n.paces.mu.RLock()
	pacesSame := paces == n.paces.ver
	n.paces.mu.RUnlock()
	if !susSame {
		if err := n.reload(); err != nil {
			return err
		}
	}
	if !pacesSame {
		return n.reloadPaces()
	}
	return nil
}

// versionOf reads a version counter MGET returned: nil (never bumped) is 0.
func versionOf(v any) (int64, error) {
	if v == nil {
		return 0, nil
	}
	s, _ := v.(string)
	return strconv.ParseInt(s, 10, 64)
}

// reload replaces the snapshot with what Redis holds. Local changes of a
// later version than the snapshot stay on top of it. When the version went
// back, Redis lost its data (restarted without persistence): the local
// changes are dropped and the suspensions this node began that are still
// in force are sent again.
func (n *Node) reload() error {
	ctx, cancel := n.ctx()
	defer cancel()
	res, err := loadScript.Run(ctx, n.rdb, nil, n.prefix).Slice()
	if err != nil || len(res) == 0 {
		return fmt.Errorf("cluster: load suspensions: %v", err)
	}
	ver, _ := res[0].(int64)
	snap := decodeEntries(res[1:])
	s := &n.sus
	s.mu.Lock()
	lost := ver < s.snapVer
	for m, p := range s.recent {
		if p.ver <= ver || lost {
			delete(s.recent, m)
		}
	}
	s.snap, s.snapVer = snap, ver
	s.mu.Unlock()
	if lost {
		return n.pushMine()
	}
	return nil
}

// pushPending sends the resumes and suspensions this node saw while
// Redis was down.
func (n *Node) pushPending() error {
	s := &n.sus
	s.mu.Lock()
	now := s.lastNow
	var removals []string
	for m := range s.removals {
		removals = append(removals, m)
	}
	pending := inForce(now, s.pending, nil)
	s.mu.Unlock()
	if len(removals) > 0 {
		if _, _, err := n.removeShared(removals); err != nil {
			return err
		}
	}
	if err := n.putAll(now, pending); err != nil {
		return err
	}
	s.mu.Lock()
	for _, m := range removals {
		delete(s.removals, m)
	}
	for _, e := range pending {
		m := member(e.Scope.String(), e.Action)
		if p, ok := s.pending[m]; ok && p.ID == e.ID && !p.Until.After(e.Until) {
			delete(s.pending, m)
		}
	}
	s.mu.Unlock()
	return nil
}

// pushMine sends again the suspensions this node began that are still in
// force, after Redis lost them.
func (n *Node) pushMine() error {
	s := &n.sus
	s.mu.Lock()
	now := s.lastNow
	mine := inForce(now, s.known, s.mine)
	s.mu.Unlock()
	return n.putAll(now, mine)
}

// inForce returns the entries of es in force at now, only those of the
// members in only when it is not nil.
func inForce(now time.Time, es map[string]entry, only map[string]bool) []entry {
	var out []entry
	for m, e := range es {
		if (only == nil || only[m]) && e.Until.After(now) {
			out = append(out, e)
		}
	}
	return out
}

// putAll puts entries this node holds; Redis stores or extends each.
func (n *Node) putAll(now time.Time, es []entry) error {
	for _, e := range es {
		if _, _, _, err := n.putShared(now, e); err != nil {
			return err
		}
	}
	return nil
}
