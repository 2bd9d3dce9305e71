package delivery

import "time"

// warmFor is how long a destination that went idle keeps the concurrency
// it earned: "succeeded recently". After that it starts slow again.
const warmFor = 5 * time.Minute

// maxWarm bounds the destinations remembered.
const maxWarm = 10000

// warmth is a forgotten destination's window and when it went idle.
type warmth struct {
	window int
	at     time.Time
}

// keepWarm remembers the window d earned, as it is forgotten.
func (s *schedState) keepWarm(d *dest, now time.Time) {
	if d.window <= initialWindow {
		return
	}
	if s.warm == nil {
		s.warm = map[string]warmth{}
	}
	if len(s.warm) >= maxWarm {
		for name, w := range s.warm {
			if now.Sub(w.at) >= warmFor {
				delete(s.warm, name)
			}
		}
		if len(s.warm) >= maxWarm {
			clear(s.warm)
		}
	}
	s.warm[d.name] = warmth{window: d.window, at: now}
}

// warmWindow is the window a destination starts with: the one it earned
// if it went idle less than warmFor ago, else the slow start.
func (s *schedState) warmWindow(name string, now time.Time) int {
	w, ok := s.warm[name]
	if !ok {
		return initialWindow
	}
	delete(s.warm, name)
	if now.Sub(w.at) >= warmFor {
		return initialWindow
	}
	return w.window
}
