package shaping

import (
	"math"
	"strconv"
	"time"
)

// Adaptive is how a scope learns its rate from the receiver's own
// replies. A scope that never sent a throttle signal has no learned rate
// and is not paced at all; on a signal its rate is multiplied by
// Decrease (at most once per Hold), and after each IncreaseAfter without
// one it rises by Increase, up to the scope's configured max_message_rate
// (its ceiling, if any). After ForgetAfter without a signal the learned
// rate is dropped and the scope is unpaced again.
type Adaptive struct {
	Enabled       bool
	Decrease      float64 // 0 < x < 1: the rate is multiplied by this on a signal
	Increase      float64 // > 0: the fraction the rate rises by per step
	IncreaseAfter time.Duration
	Hold          time.Duration // signals within this long of a decrease count once
	Floor         Rate          // never slower than this
	ForgetAfter   time.Duration
	// Off lists the scopes that never adapt (adaptive: false in their
	// provider or domain entry).
	Off map[Scope]bool
}

// DefaultAdaptive is the adaptive pacing of config/defaults.yaml.
func DefaultAdaptive() Adaptive {
	return Adaptive{
		Enabled: true, Decrease: 0.5, Increase: 0.1,
		IncreaseAfter: 10 * time.Second, Hold: 2 * time.Second,
		Floor: Rate{N: 1, Per: time.Minute}, ForgetAfter: time.Hour,
	}
}

// check reports the first value that cannot work when Enabled.
func (a Adaptive) check() error {
	if !a.Enabled {
		return nil
	}
	switch {
	case !(a.Decrease > 0 && a.Decrease < 1):
		return fieldErr("adaptive", ".decrease", "%v must be more than 0 and less than 1", a.Decrease)
	case !(a.Increase > 0) || math.IsInf(a.Increase, 0):
		return fieldErr("adaptive", ".increase", "%v must be more than 0", a.Increase)
	case a.IncreaseAfter <= 0:
		return fieldErr("adaptive", ".increase_after", "%v must be more than 0", a.IncreaseAfter)
	case a.Hold < 0:
		return fieldErr("adaptive", ".hold", "%v must not be negative", a.Hold)
	case a.Floor.IsZero():
		return fieldErr("adaptive", ".floor", "empty; a learned rate needs a floor such as \"1/min\"")
	case a.ForgetAfter <= 0:
		return fieldErr("adaptive", ".forget_after", "%v must be more than 0", a.ForgetAfter)
	}
	return nil
}

// Pace is a scope's learned rate as stored in a PaceState: the interval
// it was set to at Since (a decrease or a pin), from which the current
// rate follows by arithmetic alone (Adaptive.current), so a State stores
// it once per change, not once per step, and every node computes the
// same rate from the same record.
type Pace struct {
	Scope    Scope
	Interval time.Duration
	Since    time.Time
	// Pinned: an operator fixed the rate; no signal or step changes it and
	// it is never forgotten.
	Pinned bool
	Signal Signal // the signal of the last decrease
	// From is the interval the last decrease started from.
	From time.Duration `json:",omitempty"`
	// Peak, when not 0, is the interval to come back to quickly: the
	// rate before a run of decreases that came while nothing was
	// delivered (so they said nothing of the rate). Each step up doubles
	// the rate until it is back there, then the steps are Increase again.
	Peak time.Duration `json:",omitempty"`
}

// Signal is a throttle signal as an operator sees it.
type Signal struct {
	Reply string
	At    time.Time
	Node  string // the node that saw it ("" on a single node)
}

// same reports whether p and q are the same stored record (for SwapPace).
func (p Pace) same(q Pace) bool {
	return p.Interval == q.Interval && p.Since.Equal(q.Since) && p.Pinned == q.Pinned
}

// Same is same, for States outside this package.
func (p Pace) Same(q Pace) bool { return p.same(q) }

// PaceState is a State that keeps learned rates: Memory in one process,
// cluster.Node in Redis so that every node paces a scope alike. Keys are
// scope keys (Scope.String()).
type PaceState interface {
	// Pace returns the learned rate of key, if it has one.
	Pace(key string) (Pace, bool)
	// SwapPace stores p for key if key's record is still old (nil: key
	// has none), and reports whether it did. Records are dropped by
	// DropPace only (the Shaper drops those quiet for forget_after).
	SwapPace(key string, old *Pace, p Pace) bool
	// DropPace forgets key's learned rate; it reports whether there was one.
	DropPace(key string) bool
	// Paces lists every learned rate, by scope.
	Paces() []Pace
}

// maxSteps bounds the steps up computed from one record: forget_after
// over increase_after is far below it in any sane configuration, and a
// rate that rose that often is as good as unpaced.
const maxSteps = 100_000

// minStep is the smallest step up: one message per minute, so a scope
// paced near the floor climbs back in minutes, not hours.
const minStep = 1.0 / 60

// unmeasuredStart is the rate a scope's first decrease starts from when
// nothing was delivered to measure and the scope has no ceiling: 10/s,
// about what one or two connections deliver, so that the halved rate
// still drains a backlog of a hundred in 20 s, and a hidden limit below
// it is found in a few decreases, hold apart. The floor instead (1/min)
// held a hundred messages for over an hour when the signal said nothing
// of the rate.
var unmeasuredStart = Rate{N: 10, Per: time.Second}

// current is p's rate at now as an interval (0: risen beyond any
// limit, unpaced), given the scope's ceiling interval (0: none), and the
// time of the next step up (zero: none comes).
func (a Adaptive) current(p Pace, ceiling time.Duration, now time.Time) (time.Duration, time.Time) {
	if p.Pinned {
		return p.Interval, time.Time{}
	}
	steps := int64(0)
	if d := now.Sub(p.Since); d > 0 {
		steps = int64(d / a.IncreaseAfter)
	}
	perSec := float64(time.Second) / float64(p.Interval)
	top, peak := math.Inf(1), 0.0
	if ceiling > 0 {
		top = float64(time.Second) / float64(ceiling)
	}
	if p.Peak > 0 {
		peak = float64(time.Second) / float64(p.Peak)
	}
	for i := int64(0); i < steps; i++ {
		if perSec < peak {
			perSec = min(perSec*2, peak)
		} else {
			perSec = max(perSec*(1+a.Increase), perSec+minStep)
		}
		if perSec >= top {
			return ceiling, time.Time{}
		}
		if perSec > maxRatePerSecond || i >= maxSteps {
			return 0, time.Time{}
		}
	}
	next := p.Since.Add(time.Duration(steps+1) * a.IncreaseAfter)
	return max(ceiling, perSecInterval(perSec)), next
}

// perSecInterval is the interval of a rate in messages per second,
// rounded up so the rate is never exceeded.
func perSecInterval(perSec float64) time.Duration {
	return time.Duration(math.Ceil(float64(time.Second) / perSec))
}

// decreased is the interval after a signal, from the one it found
// (found.go): Decrease times the rate, never below the floor, never
// above the ceiling.
func (a Adaptive) decreased(cur, ceiling time.Duration) time.Duration {
	iv := time.Duration(math.Ceil(float64(cur) / a.Decrease))
	if fl := a.Floor.Interval(); cur <= 0 || iv > fl {
		iv = max(fl, cur) // never slower than the floor unless the scope already was
	}
	return max(iv, ceiling)
}

// RateText writes an interval as a rate for people: "2.5/s", "30/min",
// "4/h"; "unpaced" for 0.
func RateText(iv time.Duration) string {
	if iv <= 0 {
		return "unpaced"
	}
	perSec := float64(time.Second) / float64(iv)
	switch {
	case perSec >= 1:
		return strconv.FormatFloat(perSec, 'g', 3, 64) + "/s"
	case perSec*60 >= 1:
		return strconv.FormatFloat(perSec*60, 'g', 3, 64) + "/min"
	}
	return strconv.FormatFloat(perSec*3600, 'g', 3, 64) + "/h"
}
