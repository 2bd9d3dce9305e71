package queue

import (
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The reserve. Claims, outcomes, reports and pruning all write, and a
// file system that fills up with new mail (and with the events and
// history of mail delivered) would leave none of them room: the queued
// mail would wait for minutes or hours. So intake stops while the room
// left is below Options.Reserve (Low), and the writes of mail already
// queued go on using the reserve.

// roomRecheck bounds how often Low asks the file system: free space moves
// slowly, and the question comes once per message.
const roomRecheck = 250 * time.Millisecond

// roomCache is Low's last answer and when it was found.
type roomCache struct {
	at  atomic.Int64 // unix nanoseconds of the last look; 0 for none
	low atomic.Bool
}

// roomLeft is the space left for the queue's writes: what the file system
// under the queue file lets relayq write, plus the free pages inside the
// file, which writes reuse. The file's length past its last page is not
// counted: bbolt grows the file with truncate, which leaves a hole that
// takes disk space only when written. -1 when the file system cannot say.
func (s *Store) roomLeft() int64 {
	avail, ok := fsAvail(s.path)
	if !ok {
		return -1
	}
	var page int64
	if s.view(func(tx *bolt.Tx) error { page = int64(tx.DB().Info().PageSize); return nil }) != nil {
		return avail
	}
	return avail + int64(s.db.Stats().FreePageN)*page
}

// Low reports whether the room left (roomLeft) is below Options.Reserve: new
// mail must then be refused, so that what is queued can still be
// delivered. Never low without a reserve, or where the room is unknown.
func (s *Store) Low() bool {
	if s.opts.Reserve <= 0 {
		return false
	}
	now := s.now().UnixNano()
	if at := s.room.at.Load(); at != 0 && now-at < int64(roomRecheck) && now >= at {
		return s.room.low.Load()
	}
	r := s.roomLeft()
	low := r >= 0 && r < s.opts.Reserve
	s.room.low.Store(low)
	s.room.at.Store(now)
	return low
}
