package repair

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/relayq/relayq/queue"
)

// CheckReport is what Check found.
type CheckReport struct {
	Path      string `json:"path"`
	FileBytes int64  `json:"file_bytes"`
	// Structure lists damage to the file's structure (bbolt's pages and
	// freelist): a relay refuses to start on such a file.
	Structure []string `json:"structure,omitempty"`
	// Messages counts envelopes that decoded; Problems lists the messages
	// that would be quarantined (bodies are verified with Bodies only).
	Messages int             `json:"messages"`
	Problems []queue.Problem `json:"problems,omitempty"`
	// Quarantined counts messages already in quarantine; Quarantine lists
	// the first maxCheckQuarantine of them.
	Quarantined int                 `json:"quarantined"`
	Quarantine  []queue.Quarantined `json:"quarantine,omitempty"`
	// BodiesChecked says whether every body byte was verified.
	BodiesChecked bool `json:"bodies_checked"`
}

// OK reports whether the check found nothing wrong.
func (r *CheckReport) OK() bool { return len(r.Structure) == 0 && len(r.Problems) == 0 }

// CheckOptions tunes Check.
type CheckOptions struct {
	// Bodies verifies every body chunk's checksum and length too (reads
	// the whole file); without it bodies are checked when delivered.
	Bodies bool
	// LockTimeout bounds the wait for the file lock; default 1s.
	LockTimeout time.Duration
}

// maxCheckQuarantine caps the quarantine listed by Check.
const maxCheckQuarantine = 10000

// Check examines the queue file at path without changing it. An error
// means the check could not run (no such file, or a running relay holds
// it: queue.ErrLocked); damage is reported in the CheckReport.
func Check(path string, o CheckOptions) (*CheckReport, error) {
	if o.LockTimeout <= 0 {
		o.LockTimeout = queue.DefaultLockTimeout
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("queue: check %s: %w", path, err)
	}
	rep := &CheckReport{Path: path, FileBytes: fi.Size(), BodiesChecked: o.Bodies}
	problems, err := queue.StructureProblems(path, o.LockTimeout)
	if errors.Is(err, queue.ErrLocked) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("queue: check %s: %w", path, err)
	}
	if len(problems) > 0 {
		rep.Structure = problems
		return rep, nil
	}
	ins, err := queue.Inspect(path, o.Bodies, maxCheckQuarantine, o.LockTimeout)
	if errors.Is(err, queue.ErrLocked) {
		return nil, err
	}
	rep.Messages, rep.Problems = ins.Messages, ins.Problems
	rep.Quarantined, rep.Quarantine = ins.Quarantined, ins.Quarantine
	if err != nil {
		rep.Structure = append(rep.Structure, err.Error())
	}
	return rep, nil
}
