package shaping

import "time"

// found is what a throttle signal finds of its scope: the interval the
// decrease starts from, the Peak of the record it makes, and the first
// for the log's from.
type found struct {
	from, peak time.Duration
	text       string
}

// find is what a signal at now finds of key's scope, given its record
// (live: one not forgotten) and ceiling interval (0: none).
//
// A scope that is paced decreases from its rate now. When nothing was
// delivered since its last decrease, the signal says nothing of the rate
// (nothing went at it: the receiver refuses whatever comes, for now); the
// decrease still holds back what waits, but the record keeps where the
// run of such decreases began as its Peak, to come back to quickly. A
// scope not paced decreases from the rate it was delivering at (this
// node's, times the nodes); with nothing delivered to measure, from its
// ceiling or, without one, unmeasuredStart, which is then its Peak.
func (s *Shaper) find(old Pace, live bool, key string, ceiling time.Duration, now time.Time, a Adaptive) found {
	if live {
		if cur, _ := a.current(old, ceiling, now); cur > 0 {
			f := found{from: cur, text: RateText(cur)}
			if !s.pace.meter.since(key, old.Since) {
				f.peak = old.Peak
				if f.peak == 0 {
					f.peak = max(old.From, ceiling)
				}
			}
			return f
		}
	}
	if iv := s.pace.meter.interval(key, now) / time.Duration(s.pace.nodes); iv > 0 {
		return found{from: iv, text: "unpaced, delivering at " + RateText(iv)}
	}
	start := unmeasuredStart.Interval()
	if ceiling > 0 {
		start = ceiling
	}
	return found{from: start, peak: start, text: "unpaced, nothing delivered, starting at " + RateText(start)}
}
