package queue

// The file's identity and its owner's fencing token. A queue file that
// outlives its node (a volume re-attached, a network disk) may be opened
// by another node: the identity names the file wherever it is mounted,
// and the token, raised by every takeover, lets a node that lost the file
// find out at its next write instead of writing over the new owner.

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// bucketOwner holds the file's identity and the newest fencing token any
// owner wrote (see doc.go, Layout).
var bucketOwner = []byte("owner")

var (
	ownerID    = []byte("id")
	ownerToken = []byte("token")
)

// ErrFenced is returned (wrapped) by every write once the store's
// Options.Fence refused one, or the file carries a newer owner's token
// than this store's: another node owns the file now, and nothing more is
// written through this Store.
var ErrFenced = errors.New("queue file owned by another node (fenced)")

// IdentityFile is where the copy of a queue file's identity lives beside
// it, for peers that may not open the file to read it (cluster adoption).
func IdentityFile(path string) string { return path + ".id" }

// ReadIdentity returns the identity of the queue file at path from its
// copy beside it, without opening the file.
func ReadIdentity(path string) (string, error) {
	b, err := os.ReadFile(IdentityFile(path))
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if !validIdentity(id) {
		return "", fmt.Errorf("queue: %s: %q is not a queue identity", IdentityFile(path), id)
	}
	return id, nil
}

// validIdentity: 32 lower-case hex digits, as newIdentity makes them.
func validIdentity(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

func newIdentity() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// ensureIdentity gives the file an identity if it has none (created now,
// or written before identities) and reads its owner token; then it writes
// the copy beside the file if that is missing or differs. Run by Open
// before the committer starts.
func (s *Store) ensureIdentity() error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketOwner)
		if err != nil {
			return err
		}
		if v := b.Get(ownerToken); len(v) == 8 {
			s.fileToken.Store(binary.BigEndian.Uint64(v))
		}
		if v := b.Get(ownerID); v != nil && validIdentity(string(v)) {
			s.identity = string(v)
			return nil
		}
		id, err := newIdentity()
		if err != nil {
			return err
		}
		s.identity = id
		return b.Put(ownerID, []byte(id))
	})
	if err != nil {
		return err
	}
	return s.writeIdentityFile()
}

// writeIdentityFile writes the identity's copy beside the file, atomically
// (a peer never reads half of it), unless it already says the same.
func (s *Store) writeIdentityFile() error {
	name := IdentityFile(s.path)
	if b, err := os.ReadFile(name); err == nil && strings.TrimSpace(string(b)) == s.identity {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(s.identity + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

// Owner reaches the file's identity and its owner's fencing token.
func (s *Store) Owner() Owner { return Owner{s} }

// Owner is the file's identity and fencing token (Store.Owner).
type Owner struct{ s *Store }

// Identity is the file's identity: 32 hex digits written when the file was
// created (or first opened by a relayq that knew identities), the same
// wherever the file is mounted.
func (o Owner) Identity() string { return o.s.identity }

// Token is the newest fencing token written into the file (Fence), 0 if
// none ever was.
func (o Owner) Token() uint64 { return o.s.fileToken.Load() }

// Fence writes token, the fencing token of the lease under which this
// store is opened, into the file; every later write checks that the file
// carries no newer one. It refuses (ErrFenced) a token older than the
// file's: a newer owner has written there.
func (o Owner) Fence(token uint64) error {
	s := o.s
	err := s.submit(func(w *writeTx) error {
		b := w.tx.Bucket(bucketOwner)
		if v := b.Get(ownerToken); len(v) == 8 && binary.BigEndian.Uint64(v) > token {
			return fmt.Errorf("queue: %s: token %d is older than the file's %d: %w", s.path, token, binary.BigEndian.Uint64(v), ErrFenced)
		}
		return b.Put(ownerToken, binary.BigEndian.AppendUint64(nil, token))
	})
	if err != nil {
		return err
	}
	s.token.Store(token)
	s.fileToken.Store(token)
	return nil
}

// fenceCheck runs in every write transaction just before it commits: the
// caller's Options.Fence (is the lease still ours?) and the file's token
// (has a newer owner written here?). Either refusal is for good: the
// store takes no more writes (Err says why).
func (s *Store) fenceCheck(tx *bolt.Tx) error {
	err := s.fenceErr()
	if err == nil && s.token.Load() > 0 {
		if v := tx.Bucket(bucketOwner).Get(ownerToken); len(v) == 8 && binary.BigEndian.Uint64(v) > s.token.Load() {
			err = fmt.Errorf("queue: %s: a newer owner (token %d) wrote here: %w", s.path, binary.BigEndian.Uint64(v), ErrFenced)
		}
	}
	if err != nil && s.broken.CompareAndSwap(nil, &err) {
		s.opts.Logger.Error("queue: lease lost; this store writes nothing more", "file", s.path, "err", err)
	}
	return err
}

// fenceErr asks Options.Fence; the error wraps ErrFenced.
func (s *Store) fenceErr() error {
	if s.opts.Fence == nil {
		return nil
	}
	if err := s.opts.Fence(); err != nil {
		if errors.Is(err, ErrFenced) {
			return err
		}
		return fmt.Errorf("queue: %s: %v: %w", s.path, err, ErrFenced)
	}
	return nil
}
