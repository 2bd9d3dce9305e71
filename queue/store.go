package queue

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/dirsync"
	"github.com/relayq/relayq/internal/identity"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Bucket names. See doc.go for the layout.
var (
	bucketEnvelopes = []byte("envelopes")
	bucketBodies    = []byte("bodies")
	// bucketSmallBodies holds bodies up to smallBodyMax as plain values,
	// keyed by ID: no bucket per message, so a small message costs its
	// bytes, not a page, and Open never needs to touch them.
	bucketSmallBodies = []byte("small_bodies")
	// bucketSmallBodiesSum is bucketSmallBodies with checksummed values
	// (see encodeChunk); small_bodies itself holds the plain bodies of
	// files written before checksums and gets no new ones.
	bucketSmallBodiesSum = []byte("small_bodies_sum")
	// bucketDrafts lists drafts that have spilled chunks but are not
	// committed yet; Open deletes the chunks of those a crash left behind.
	bucketDrafts     = []byte("drafts")
	bucketSchedule   = []byte("schedule")
	bucketQuarantine = []byte("quarantine")
	// bucketQuarantineBodies keeps the body of a quarantined envelope so an
	// operator can still rescue the message by hand.
	bucketQuarantineBodies = []byte("quarantine_bodies")
	// bucketQuarantineInfo says why and when each quarantined message was
	// set aside (ID -> JSON QuarantineInfo).
	bucketQuarantineInfo = []byte("quarantine_info")
)

// Options tunes a Store. The zero value gives the documented defaults.
type Options struct {
	// LockTimeout bounds the wait for the file lock (bbolt Options.Timeout);
	// default 1s. Never zero: bbolt would wait forever.
	LockTimeout time.Duration
	// Clock is the store's time source (message IDs, Created, event
	// times); default clock.Real. Tests inject a clock.Fake.
	Clock clock.Clock
	// InlineLimit: bodies up to this many bytes are written in the same
	// commit as their envelope; default 256 KiB.
	InlineLimit int
	// ChunkSize: larger bodies are spilled in chunks of this size, each in
	// its own transaction; default 1 MiB.
	ChunkSize int
	// Logger receives recovery and quarantine reports; default slog.Default().
	Logger *slog.Logger
	// Reserve is the room (bytes) kept for the writes of mail already
	// queued: below it, Low says so and intake stops (room.go). 0: none.
	Reserve int64
	// Fence, if set, says whether this process may still write the file
	// (its owner lease in a cluster): asked inside every write transaction
	// just before it commits, and before a first attempt that needs no
	// write. An error refuses the write and every later one (ErrFenced).
	Fence func() error
}

const (
	defaultLockTimeout = time.Second
	defaultInlineLimit = 256 << 10
	defaultChunkSize   = 1 << 20
)

// withDefaults fills unset fields.
func (o Options) withDefaults() Options {
	if o.LockTimeout <= 0 {
		o.LockTimeout = defaultLockTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.InlineLimit <= 0 {
		o.InlineLimit = defaultInlineLimit
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = defaultChunkSize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Store is relayq's durable queue: envelopes, bodies and the schedule index
// in one bbolt file. All methods are safe for concurrent use.
type Store struct {
	// arena is the committer goroutine's buffer for records (writeTx.record).
	arena []byte
	db    *bolt.DB
	path  string
	opts  Options
	ids   idGen
	stats stats
	// shape is what Shape counts, kept as stats is (shapeindex.go).
	shape shapeIndex
	room  roomCache

	// mu guards closed and sends on reqs, so Close can close reqs safely.
	// broken is set when a commit faulted or panicked inside bbolt: the
	// file is damaged, and no further write is tried (see runBatch).
	broken atomic.Pointer[error]

	// suppressing is false only while the suppression list is certainly
	// empty (see Suppressed): it is set at Open if the list has entries and
	// by every write that adds one, before that write commits.
	suppressing atomic.Bool
	// autoSuppressed, when set, hears of each address a bounce puts on the
	// list (SetAutoSuppressHook).
	autoSuppressed atomic.Pointer[func(Suppression)]
	// suppressScope, when set, is the scope of those entries (SetScoper).
	suppressScope atomic.Pointer[func(identity.Sender) string]
	// forced, when set, hears of each operator's retry or flush
	// (SetForceHook).
	forced atomic.Pointer[func(ids ...string)]

	// mapPages counts pages read into the file's map since it was last
	// released, and pagesWritten bbolt's count of pages written at the
	// committer's last look; mapLimit is releaseEvery (mapping.go).
	mapPages     atomic.Int64
	pagesWritten int64
	mapLimit     int64

	// intervened is the newest ID time at the last operator's change, park
	// or quarantine (see intervene): messages with newer IDs are untouched
	// by any of those since their commit.
	intervened atomic.Int64
	// attempts are the recipients with an attempt in flight (inflight.go).
	attempts claims

	// markedAtOpen are the messages recover found with pending reports
	// (Marked); set before the committer starts, read-only after.
	markedAtOpen []string

	// identity names the file (owner.go); set at Open, read-only after.
	identity string
	// token is the fencing token this store writes under (Fence), 0 if
	// none; fileToken the newest one the file carries.
	token, fileToken atomic.Uint64

	// evMu guards evCh, closed at each commit that adds events (see
	// Events().Changed).
	evMu sync.Mutex
	evCh chan struct{}
	// dict is the dictionary of repeated strings (dict.go).
	dict stringDict

	mu     sync.RWMutex
	closed bool
	reqs   chan *writeReq
	done   chan struct{}
}

// Open opens (creating if needed) the queue file at path, recovers from any
// crash (see recover.go) and starts the committer. The parent directory is
// created 0700 and the file 0600: queued mail is private.
func Open(path string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	if err := dirsync.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("queue: create directory for %s: %w", path, err)
	}
	// A damaged file is refused here, before bbolt opens it for writing
	// and can fault or panic on it (see Preflight, integrity.go).
	if err := Preflight(path, opts.LockTimeout); err != nil {
		return nil, err
	}
	var db *bolt.DB
	err := guarded(func() error {
		var err error
		db, err = bolt.Open(path, 0o600, &bolt.Options{
			Timeout: opts.LockTimeout,
			// The map freelist is O(1) per allocation. It is synced: without
			// it bbolt rebuilds the freelist at Open by walking every page of
			// the file, which is slow on a big queue and faults the whole file
			// into memory; measured, syncing it cost no throughput.
			FreelistType:   bolt.FreelistMapType,
			NoFreelistSync: false,
			NoSync:         commitSyncOff(),
		})
		return err
	})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("queue: queue file %s is in use by another relayq: %w", path, ErrLocked)
		}
		var pe *panicError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%w: %s: %v; run `relayq queue check`", ErrDamaged, path, err)
		}
		return nil, fmt.Errorf("queue: open %s: %w", path, err)
	}
	// bbolt syncs the file it creates, not its name: until the directory
	// is synced a power cut can take the whole file, and every message
	// acknowledged in it, away.
	if err := dirsync.Parent(path); err != nil {
		db.Close()
		return nil, fmt.Errorf("queue: open %s: sync its directory: %w", path, err)
	}
	s := &Store{
		db:   db,
		path: path,
		opts: opts,
		ids:  idGen{clock: opts.Clock},
		reqs: make(chan *writeReq, 1024),
		done: make(chan struct{}),

		mapLimit: releaseEvery,
	}
	if err := guarded(s.recover); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: %s: recovery failed: %v; run `relayq queue check`", ErrDamaged, path, err)
	}
	if err := s.ensureIdentity(); err != nil {
		db.Close()
		return nil, fmt.Errorf("queue: open %s: identity: %w", path, err)
	}
	if err := s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketSuppressions); b != nil {
			k, _ := b.Cursor().First()
			s.suppressing.Store(k != nil)
		}
		return nil
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("queue: open %s: suppression list: %w", path, err)
	}
	if err := s.releaseNow(); err != nil {
		opts.Logger.Debug("queue: could not release pages read at start-up", "file", path, "err", err)
	}
	go s.commitLoop()
	return s, nil
}

// Close stops the committer after it has answered every request already
// submitted, then closes the file. Later calls return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("queue: close %s: %w", s.path, ErrClosed)
	}
	s.closed = true
	close(s.reqs)
	s.mu.Unlock()
	<-s.done
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("queue: close %s: %w", s.path, err)
	}
	return nil
}

// now reads the store's clock.
func (s *Store) now() time.Time { return s.opts.Clock.Now() }

// view runs a read transaction; after Close it reports ErrClosed like every
// write does, rather than bbolt's own error.
//
// A fault or panic inside bbolt (a file damaged while relayq runs) becomes
// an error of this call, not a crash of the process.
func (s *Store) view(fn func(tx *bolt.Tx) error) error {
	err := guarded(func() error { return s.db.View(fn) })
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("queue: %w", ErrClosed)
	}
	return err
}
