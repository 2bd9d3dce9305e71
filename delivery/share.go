package delivery

// The recipient domains of a destination share its slots. Several domains
// can have one destination (a static route or the wildcard route to one
// host:port, the smarthost), and a server can be slow for one of them
// only: a tarpit at RCPT, a content filter or a mailbox server behind it
// that hangs for that domain. Taken in arrival order, the slow domain's
// jobs would fill every slot the destination has (two for one that has
// not answered recently, since a hung attempt never widens the window)
// and its other domains would wait behind them for as long as the server
// holds them, minutes each (RFC 5321 section 4.5.3.2 gives RCPT five).
//
// So within a destination several domains share, the next job comes from
// the waiting domain with the fewest attempts in flight there (ties in
// queue order), and a domain with no attempt in flight there may start one
// even when the others hold all of the destination's window, within its
// even share of the workers and shaping's limits (Admit still decides):
// the first answer it gets widens the window for everyone. A destination
// of one domain (MX delivery: the destination is the domain) is not
// concerned.
//
// A job is counted under the domain of its first recipient: recipients
// of one message that share a destination go in one transaction whatever
// their domains.

// domainShare counts one destination's jobs waiting and attempts in
// flight by recipient domain. Only the scheduler goroutine touches it.
type domainShare struct {
	waiting map[string]int
	flying  map[string]int
}

// add counts a job of domain waiting.
func (s *domainShare) add(domain string) {
	if s.waiting == nil {
		s.waiting = map[string]int{}
	}
	s.waiting[domain]++
}

// drop counts a job of domain gone from the queue without being taken.
func (s *domainShare) drop(domain string) {
	if n := s.waiting[domain] - 1; n > 0 {
		s.waiting[domain] = n
	} else {
		delete(s.waiting, domain)
	}
}

// took counts a job of domain started.
func (s *domainShare) took(domain string) {
	s.drop(domain)
	if s.flying == nil {
		s.flying = map[string]int{}
	}
	s.flying[domain]++
}

// done counts an attempt of domain that gave its slot back.
func (s *domainShare) done(domain string) {
	if n := s.flying[domain] - 1; n > 0 {
		s.flying[domain] = n
	} else {
		delete(s.flying, domain)
	}
}

// fewerElsewhere reports whether a domain other than domain has jobs
// waiting and fewer than n attempts in flight.
func (s *domainShare) fewerElsewhere(domain string, n int) bool {
	for d := range s.waiting {
		if d != domain && s.flying[d] < n {
			return true
		}
	}
	return false
}

// sharedBy reports whether j's destination can hold other domains than
// j's own.
func (j *job) sharedBy() bool { return j.dest != j.domain }

// fairPick turns the index i of the job whose turn it is (pick) into the
// index of the job to ask for next, by the domains' share of d: the first
// job of the waiting domain with the fewest attempts in flight in d, j's
// own domain when none has fewer. Forced and expired jobs keep their turn.
func (d *dest) fairPick(i int) int {
	j := d.queue[i]
	if j.force || j.expired || !j.sharedBy() {
		return i
	}
	pick, mine := i, d.domains.flying[j.domain]
	if mine > 0 && d.domains.fewerElsewhere(j.domain, mine) {
		for k, o := range d.queue {
			if n := d.domains.flying[o.domain]; n < mine && o.sharedBy() {
				pick, mine = k, n
				if n == 0 {
					break
				}
			}
		}
	}
	return pick
}

// newcomer reports whether j may start though d has all the attempts in
// flight its window allows: j's domain has none there, d shares it with
// other domains, is not down to a probe (strikes) and holds less than
// share, its even share of the workers.
func (d *dest) newcomer(j *job, share int) bool {
	return j.sharedBy() && d.strikes == 0 && d.domains.flying[j.domain] == 0 && d.active < share
}
