package delivery

import "github.com/relayq/relayq/queue"

// eventBuffer is how many events wait for the scheduler before Enqueue
// falls back to a Kick and workers wait to report.
const eventBuffer = 4096

// eventKind says what an event reports.
type eventKind uint8

const (
	eventKick    eventKind = iota // look again (Kick, wake)
	eventArrived                  // env was just queued (Enqueue)
	eventFreed                    // rel: a job's slot is free again
	eventDone                     // res: a job is completely done
	eventTarget                   // resolved: a destination's MX lookup for shaping answered
	eventPause                    // idle: closed once nothing is in flight (Pause)
)

// event is one message to the scheduler goroutine.
type event struct {
	kind eventKind
	env  *queue.Envelope
	rel  release
	res  result

	resolved resolved
	idle     chan struct{}
	jobber   chan *job // eventDone: the job goroutine now idle
}

// inbox is the scheduler's one inbox: kicks, hand-overs, slots given back,
// finished jobs, MX answers and Pause calls. Only the scheduler goroutine
// receives; anyone sends. Its sends that may come from outside the engine
// (wake, offer) never block; those of the engine's own goroutines (post)
// may, and the scheduler always drains it.
type inbox chan event

// wake asks the scheduler to look again without a full rescan.
func (in inbox) wake() {
	select {
	case in <- event{kind: eventKick}:
	default: // the scheduler has events waiting: it will look anyway
	}
}

// offer hands ev over if there is room, and reports whether there was.
func (in inbox) offer(ev event) bool {
	select {
	case in <- ev:
		return true
	default:
		return false
	}
}

// post hands ev over, waiting for room.
func (in inbox) post(ev event) { in <- ev }
