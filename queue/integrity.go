package queue

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/relayq/relayq/queue/internal/boltcheck"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// A damaged bbolt file does not fail politely: bbolt maps the file and
// follows page numbers it reads from it, so a truncated file faults
// (SIGBUS/SIGSEGV) and a page listed twice panics ("page already freed"),
// sometimes in goroutines bbolt starts itself (Tx.Check, the freelist
// rebuild), where no recover can reach. So before bbolt opens the file,
// its structure is checked with plain reads that cannot fault
// (internal/boltcheck): meta pages, truncation, freelist, and every page
// of every tree. Only a sound file is opened; what bbolt does after that
// is still run with debug.SetPanicOnFault and recover (guarded), so damage
// that appears while relayq runs becomes an error, not a crash.
//
// A file that fails is refused with an error wrapping ErrDamaged. The
// operator's tools (check, salvage, compact) are in queue/repair; the
// store gives them Preflight, Inspect and the Store methods of
// salvage.go.

// Problem is one message-level finding of a check: a record that fails
// its checksum or does not decode, or a body that is missing or short.
type Problem struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// DefaultLockTimeout is the wait for the file lock when none is given.
const DefaultLockTimeout = defaultLockTimeout

// StructureProblems checks the structure of the file at path without
// mapping it (see boltcheck.Structure), then, if it is sound, that its
// top-level buckets are all ones relayq writes (strangeRoots), and
// returns what is wrong, or an error wrapping ErrLocked while a relay
// holds it.
func StructureProblems(path string, lockTimeout time.Duration) ([]string, error) {
	if lockTimeout <= 0 {
		lockTimeout = defaultLockTimeout
	}
	problems, err := boltcheck.Structure(path, lockTimeout)
	if errors.Is(err, boltcheck.ErrLocked) {
		return nil, fmt.Errorf("queue: queue file %s is in use by another relayq: %w", path, ErrLocked)
	}
	if err != nil || len(problems) > 0 {
		return problems, err
	}
	return strangeRoots(path, lockTimeout)
}

// Preflight is Open's check of an existing file: structure only (damaged
// messages are quarantined by recover). It returns an error wrapping
// ErrDamaged, with the first finding and the advice, for a damaged file.
func Preflight(path string, lockTimeout time.Duration) error {
	if lockTimeout <= 0 {
		lockTimeout = defaultLockTimeout
	}
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) || err == nil && fi.Size() == 0 {
		return nil // a new queue
	}
	if err != nil {
		return fmt.Errorf("queue: check %s: %w", path, err)
	}
	problems, err := StructureProblems(path, lockTimeout)
	if errors.Is(err, ErrLocked) {
		return err
	}
	if err != nil {
		return fmt.Errorf("queue: check %s: %w", path, err)
	}
	if len(problems) > 0 {
		more := ""
		if n := len(problems) - 1; n > 0 {
			more = fmt.Sprintf(" (and %d more)", n)
		}
		return fmt.Errorf("%w: %s: %s%s; run `relayq queue check`", ErrDamaged, path, problems[0], more)
	}
	return nil
}

// guarded runs fn with faults in mapped memory and panics turned into an
// error (a *panicError).
func guarded(fn func() error) error { return boltcheck.Guarded(fn) }

// panicError is a panic or memory fault caught by guarded.
type panicError = boltcheck.PanicError

// Inspection is what Inspect found in the messages of a file.
type Inspection struct {
	// Messages counts envelopes that decoded (and, with bodies, whose
	// body verified); Problems lists the messages that would be
	// quarantined.
	Messages int
	Problems []Problem
	// Quarantined counts messages already in quarantine; Quarantine lists
	// the first limit of them.
	Quarantined int
	Quarantine  []Quarantined
}

// Inspect decodes every envelope of the queue file at path, read-only and
// guarded, and with bodies verifies every body chunk and length, without
// changing the file; it lists at most limit quarantined messages. It fails
// with an error wrapping ErrLocked while a relay holds the file; any other
// error is damage bbolt met reading it (what was inspected before is
// returned with it). Check the structure first (StructureProblems).
func Inspect(path string, bodies bool, limit int, lockTimeout time.Duration) (*Inspection, error) {
	if lockTimeout <= 0 {
		lockTimeout = defaultLockTimeout
	}
	ins := &Inspection{}
	db, err := guardedOpen(path, lockTimeout)
	if err != nil {
		return ins, err
	}
	defer db.Close()
	err = guarded(func() error { return db.View(func(tx *bolt.Tx) error { return walk(tx, ins, bodies, limit) }) })
	return ins, err
}

// guardedOpen opens path read-only under guarded, for reading records.
// The freelist is not loaded: the read-only walk does not need it.
func guardedOpen(path string, lockTimeout time.Duration) (*bolt.DB, error) {
	var db *bolt.DB
	err := guarded(func() error {
		var err error
		db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: lockTimeout})
		return err
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("queue: queue file %s is in use by another relayq: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("opening: %w", err)
	}
	return db, nil
}

// walk decodes every envelope and, with bodies, verifies every body.
func walk(tx *bolt.Tx, ins *Inspection, bodies bool, limit int) error {
	ins.Quarantined = countQuarantined(tx)
	ins.Quarantine, _ = listQuarantined(tx, "", limit)
	envs := tx.Bucket(bucketEnvelopes)
	if envs == nil {
		return nil
	}
	c := envs.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		env, err := decodeEnvelope(v)
		if err == nil && env.ID != string(k) {
			err = fmt.Errorf("%w: record ID %q under key %q", ErrDamaged, env.ID, k)
		}
		if err == nil && bodies {
			err = verifyBody(tx, env)
		}
		if err != nil {
			ins.Problems = append(ins.Problems, Problem{ID: string(k), Reason: err.Error()})
			continue
		}
		ins.Messages++
	}
	return nil
}

// verifyBody reads env's body chunk by chunk as delivery would, checking
// every checksum and the total length.
func verifyBody(tx *bolt.Tx, env *Envelope) error {
	var n int64
	for i := uint32(0); n < env.Size; i++ {
		var v []byte
		var err error
		if i == 0 {
			v, err = getSmallBody(tx, env.ID)
		}
		if v == nil && err == nil {
			if bodies := tx.Bucket(bucketBodies); bodies != nil {
				if b := bodies.Bucket([]byte(env.ID)); b != nil {
					v, err = getChunk(b, env.ID, i)
				}
			}
		}
		if err != nil {
			return err
		}
		if len(v) == 0 {
			return fmt.Errorf("%w: body chunk %d missing after %d of %d bytes", ErrDamaged, i, n, env.Size)
		}
		n += int64(len(v))
	}
	if n != env.Size {
		return fmt.Errorf("%w: body is %d bytes, envelope says %d", ErrDamaged, n, env.Size)
	}
	return nil
}
