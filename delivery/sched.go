package delivery

import (
	"time"

	"github.com/relayq/relayq/delivery/egress"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/queue"
)

// schedState is what the scheduler knows: the destinations and their
// queues, the messages in memory, the counts of jobs, its position in the
// schedule index, the operators' forced messages of the scan under way,
// the refusals of the current start call and the warm-up of forgotten
// destinations. Only the scheduler goroutine touches it (the cursor's
// reset excepted: see cursor).
type schedState struct {
	workers int
	busy    map[string]int // message ID → jobs in memory
	dests   map[string]*dest
	active  int               // jobs holding a worker slot (talking SMTP)
	running int               // jobs and MX lookups not done yet (an outcome may still be being written)
	pending int               // jobs waiting in destination queues
	arrived []*queue.Envelope // new messages handed over by Enqueue
	cursor  cursor
	// forceIDs and forceScan: the messages (or, forceScan, everything) the
	// scan under way loads as forced jobs; cleared when it completes.
	forceIDs  map[string]bool
	forceScan bool
	starts    uint64 // start calls, for dest.refusedIn
	fills     uint64 // fill calls, for parking.probeIn
	// scanBehind: the last scan stopped before it reached now (the
	// in-memory queue was full, or a write failed), so the next fill
	// scans whatever the cursor knows.
	scanBehind bool
	// refusals are the scopes shaping refused in the current start call,
	// by stream (refusedScope).
	refusals map[scopeStream]shaping.Wait
	// warm remembers the slow-start window of destinations forgotten
	// while idle, for warmFor (warm.go).
	warm map[string]warmth
	// streams are the configured streams, from the settings streamsOf
	// (useStreams, streams.go).
	streams   streamTable
	streamsOf *Settings
}

func newSchedState(workers int) schedState {
	return schedState{workers: workers, busy: map[string]int{}, dests: map[string]*dest{}, refusals: map[scopeStream]shaping.Wait{}, streams: newStreamTable(nil)}
}

// inMemory reports whether a job of message id is in memory.
func (s *schedState) inMemory(id string) bool { return s.busy[id] > 0 }

// unbusy notes that one job of message id left memory.
func (s *schedState) unbusy(id string) {
	if n := s.busy[id] - 1; n > 0 {
		s.busy[id] = n
	} else {
		delete(s.busy, id)
	}
}

// job is one attempt to come: the due recipients of one message that share
// a destination, so they go in one SMTP transaction.
type job struct {
	id    string
	env   *queue.Envelope
	dest  string
	addrs []string
	// domain is the recipient domain the job counts under in its
	// destination's share (share.go): its first recipient's.
	domain string
	// expired: past max_age; bounce without an attempt, whatever the
	// destination's state.
	expired bool
	// preclaimed: the first attempt was recorded when the message was
	// queued (Engine.ClaimFirst); while that claim holds, the attempt uses
	// it (queue.Store.UseFirstClaim) instead of a Claim.
	preclaimed bool
	// force: an operator's retry or flush; suspensions and message rates
	// do not hold it back (Engine.Force).
	force bool
	// target and lease are the shaping scopes of the attempt and the
	// connection it holds there, from start until the slot is freed.
	target shaping.Target
	lease  *shaping.Lease
	// idle is a cached connection that came with lease (reuseIdle),
	// for the attempt to reuse, or close.
	idle *smtpclient.Idle
	// source is the local address the attempt goes from (egress.go); nil
	// without egress.
	source *egress.Source
	// drawn is the source askFrom drew first for the job, admitted or
	// not: the one an idle connection may be reused from.
	drawn *egress.Source
	// freed is set by the worker once it has given its slot back.
	freed bool
	// tls is how the last attempt's connection was secured.
	tls smtpclient.TLSInfo
	// lane is the job's stream and whether it is a retry (streams.go).
	lane lane
}

// ask is what shaping is told of j when it asks for admission.
func (j *job) ask() shaping.Ask {
	a := shaping.Ask{Force: j.force}
	if j.env != nil {
		a.Stream = j.env.Sender.Stream
	}
	return a
}

// release gives a job's worker and destination slot back to the scheduler
// as soon as the SMTP conversation is over, before the outcome is written:
// the next message for the destination need not wait for that fsync.
type release struct {
	job *job
	// suspend: the destination said 421 or could not be reached at all;
	// back off the whole destination.
	suspend bool
	// alive: some server answered for the recipients (any reply other than
	// a destination-wide failure), so the destination works again.
	alive bool
	// cause is the reply that suspends, shown with the back-off.
	cause string
}

// result is what an attempt reports back to the scheduler when it is
// completely done (after its release).
type result struct {
	job *job
	// recorded: the attempt's outcome (or its claim) moved the message's
	// schedule entry forward, or the message left the schedule. When not,
	// the entry may still be due before the scan position, so the cursor
	// is reset.
	recorded bool
	// next is the message's earliest next attempt after the outcome was
	// recorded (zero when it is done).
	next time.Time
	// notices, when not zero, is a time no later than the due time of the
	// reports (DSNs) the outcome queued.
	notices time.Time
	// failed names the queue operation that failed, if one did.
	failed StorageOp
	// unwritten, when set, is the attempt's outcome that the queue could
	// not take: the scheduler keeps it and writes it later.
	unwritten *pendingRecord
	// left: the recipients whose reports the outcome written marks as
	// owed (group.go), as recorded.
	left []queue.Recipient
	// dsnLater: this job was to queue its message's marked reports and
	// could not, so the scheduler retries (writeOwedDSNs).
	dsnLater bool
}

// dest is the scheduler's view of one destination: the unit of concurrency
// and of back-off.
type dest struct {
	name    string
	active  int
	queue   []*job
	until   time.Time // suspended until; zero when not suspended
	strikes int       // consecutive destination-wide failures
	// window is the slow-start limit on attempts in flight (0 means
	// initialWindow): widened by each attempt a server answered.
	window int
	// notBefore: shaping said the next token comes then (WaitRate).
	notBefore time.Time
	// recheck: shaping refused for connections, which another node may
	// hold; no release here tells when they are free, so the scheduler
	// wakes then to ask again (connRecheck).
	recheck time.Time
	// refusedIn is the start call in which shaping last refused d: it is
	// not asked again in the same call.
	refusedIn uint64
	// target is the destination's shaping target, valid until targetUntil
	// (zero: until the policy changes) once hasTarget; resolving while an
	// MX lookup for it is under way.
	target      shaping.Target
	targetUntil time.Time
	hasTarget   bool
	resolving   bool
	// turns: whose turn it is among the streams and kinds waiting (streams.go).
	turns turns
	// park: its mail parked on disk while it is suspended (park.go).
	park parking
	// domains: its jobs waiting and attempts in flight by recipient
	// domain, for their share of its slots (share.go).
	domains domainShare
}
