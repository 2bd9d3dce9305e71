package queue

import (
	"os"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Stats is a snapshot of the queue for metrics. It is kept in memory,
// rebuilt at Open and updated after each successful commit, so reading it
// costs no disk access.
type Stats struct {
	// Messages is the number of stored messages, held ones included.
	Messages int
	// Held is the number of held messages.
	Held int
	// Recipients counts recipients of stored messages by status.
	Recipients map[Status]int
	// Oldest is the Created time of the message with the lowest ID (IDs are
	// time-ordered, so this is the oldest message); zero when empty.
	Oldest time.Time
	// Quarantined is the number of messages in quarantine, and
	// QuarantinedSinceOpen how many were put there since Open (at Open
	// itself included): damaged records that are never delivered.
	Quarantined          int
	QuarantinedSinceOpen uint64
	// FileBytes is the queue file's size; FreeBytes how much of it holds
	// no data and is reused by later writes. The file never shrinks by
	// itself: `relayq queue compact` gives FreeBytes back (offline).
	FileBytes, FreeBytes int64
	// Commits counts group commits (one fsync pair each) made by the
	// committer since Open; CommittedWrites counts the write requests they
	// carried. CommittedWrites/Commits is the mean batch size. Body chunks
	// spilled by a Draft are written outside the committer and not counted.
	Commits, CommittedWrites uint64
	// Streams counts stored messages by stream (those stored before
	// streams, without one, are not counted here).
	Streams map[string]int
}

// countedStatuses are the statuses Stats counts, by index.
var countedStatuses = [...]Status{StatusQueued, StatusDeferred, StatusDelivered, StatusBounced, StatusScheduled}

// counts is what one envelope contributes to Stats, or, summed, the change a
// transaction makes to them.
type counts struct {
	messages, held int
	// recipients counts by status, indexed as countedStatuses: an array,
	// not a map, because every write request has its own counts.
	recipients [len(countedStatuses)]int
	// quarantined counts messages in quarantine (see quarantine.go).
	quarantined int
	// streams counts messages by stream.
	streams streamCounts
}

// streamCounts counts by stream name without allocating for the first
// few names (every write request has its own counts; streams are a
// handful, configured).
type streamCounts struct {
	names [4]string
	n     [4]int
	more  map[string]int
}

func (s *streamCounts) add(name string, d int) {
	for i := range s.names {
		switch s.names[i] {
		case name:
			s.n[i] += d
			return
		case "":
			s.names[i], s.n[i] = name, d
			return
		}
	}
	if s.more == nil {
		s.more = map[string]int{}
	}
	s.more[name] += d
}

func (s *streamCounts) merge(o *streamCounts) {
	for i, name := range o.names {
		if name != "" && o.n[i] != 0 {
			s.add(name, o.n[i])
		}
	}
	for name, n := range o.more {
		s.add(name, n)
	}
}

// counted returns the counts that are not zero.
func (s *streamCounts) counted() map[string]int {
	out := map[string]int{}
	for i, name := range s.names {
		if name != "" && s.n[i] != 0 {
			out[name] = s.n[i]
		}
	}
	for name, n := range s.more {
		if n != 0 {
			out[name] = n
		}
	}
	return out
}

// add adds sign times env's contribution.
func (c *counts) add(env *Envelope, sign int) {
	if env == nil {
		return
	}
	c.messages += sign
	if env.Held {
		c.held += sign
	}
	if env.Sender.Stream != "" {
		c.streams.add(env.Sender.Stream, sign)
	}
	for _, r := range env.Recipients {
		if i := slices.Index(countedStatuses[:], r.Status); i >= 0 { // validated: always
			c.recipients[i] += sign
		}
	}
}

// stats holds the live counters behind Store.Stats.
type stats struct {
	mu              sync.Mutex
	c               counts
	oldest          time.Time
	commits, writes uint64
	// quarantinedNew counts quarantinings since Open.
	quarantinedNew uint64
}

// apply folds a committed batch into the counters.
func (s *stats) apply(d counts, oldest time.Time, writes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c.merge(d)
	if d.quarantined > 0 {
		s.quarantinedNew += uint64(d.quarantined)
	}
	s.oldest = oldest
	s.commits++
	s.writes += uint64(writes)
}

// snapshot copies the counters out.
func (s *stats) snapshot() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	rc := make(map[Status]int, len(s.c.recipients))
	for i, n := range s.c.recipients {
		if n != 0 {
			rc[countedStatuses[i]] = n
		}
	}
	return Stats{
		Messages:        s.c.messages,
		Held:            s.c.held,
		Recipients:      rc,
		Oldest:          s.oldest,
		Commits:         s.commits,
		CommittedWrites: s.writes,

		Quarantined:          s.c.quarantined,
		QuarantinedSinceOpen: s.quarantinedNew,
		Streams:              s.c.streams.counted(),
	}
}

// Stats returns a snapshot of the in-memory counters, and the file's size
// and free space (one stat call and bbolt's own counters).
func (s *Store) Stats() Stats {
	st := s.stats.snapshot()
	st.FileBytes, st.FreeBytes = s.space()
	return st
}

// space is the file's size and the bytes in it that writes can reuse: free
// pages, and the room bbolt allocated past the pages in use.
func (s *Store) space() (file, free int64) {
	fi, err := os.Stat(s.path)
	if err != nil {
		return 0, 0
	}
	file = fi.Size()
	var used, page int64
	// Info reads bbolt's mapping: only under a read transaction (which
	// holds the mmap lock) is it safe from a commit that remaps the file.
	if s.view(func(tx *bolt.Tx) error { used, page = tx.Size(), int64(tx.DB().Info().PageSize); return nil }) != nil {
		return file, 0
	}
	free = int64(s.db.Stats().FreePageN) * page
	if file > used {
		free += file - used
	}
	return file, free
}

// PageBytes is how many bytes of pages the commits since Open wrote
// (bbolt's page allocations, freelist and meta pages aside): what a test
// asserts on to show that waiting mail is not rewritten.
func (s *Store) PageBytes() int64 {
	st := s.db.Stats()
	return st.TxStats.GetPageAlloc()
}
