package deliverability

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relayq/relayq/queue"
)

const (
	bucket   = 5 * time.Minute
	buckets  = int(24 * time.Hour / bucket)
	hourSpan = int(time.Hour / bucket)
)

// MaxKeys bounds the rows kept; a new sender domain beyond it counts as
// "other".
const MaxKeys = 1000

// ComplaintLine is the complaint rate the big providers hold bulk
// senders under: 0.3 % (Gmail's and Yahoo's sender guidelines).
const ComplaintLine = 0.003

// Key is one row of the figures.
type Key struct {
	Provider     string `json:"provider"`
	Stream       string `json:"stream"`
	SenderDomain string `json:"sender_domain"`
}

// Counts are recipients per outcome.
type Counts struct {
	Delivered    int `json:"delivered"`
	Deferred     int `json:"deferred"`
	Bounced      int `json:"bounced"`
	Complained   int `json:"complained"`
	Unsubscribed int `json:"unsubscribed"`
}

// ComplaintRate is complaints per delivered recipient, 0 with none delivered.
func (c Counts) ComplaintRate() float64 {
	if c.Delivered == 0 {
		return 0
	}
	return float64(c.Complained) / float64(c.Delivered)
}

func (c *Counts) add(o Counts) {
	c.Delivered += o.Delivered
	c.Deferred += o.Deferred
	c.Bounced += o.Bounced
	c.Complained += o.Complained
	c.Unsubscribed += o.Unsubscribed
}

// Row is one key's figures over the last hour and the last 24 hours.
type Row struct {
	Key
	Hour             Counts  `json:"hour"`
	Day              Counts  `json:"day"`
	ComplaintRate1h  float64 `json:"complaint_rate_1h"`
	ComplaintRate24h float64 `json:"complaint_rate_24h"`
}

// ring is a key's 5-minute buckets; slot i holds the bucket starting at
// starts[i].
type ring struct {
	counts [buckets]Counts
	starts [buckets]int64 // bucket number (Unix time / bucket)
}

// Tracker keeps the figures; safe for concurrent use.
type Tracker struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[Key]*ring
}

// NewTracker returns an empty Tracker on the clock now.
func NewTracker(now func() time.Time) *Tracker {
	return &Tracker{now: now, m: map[Key]*ring{}}
}

// Add counts one event, if it is an outcome the figures show.
func (t *Tracker) Add(ev queue.Event) {
	var c Counts
	switch ev.Type {
	case queue.EventDelivered:
		if ev.Async {
			return // a success DSN confirms a delivery already counted
		}
		c.Delivered = 1
	case queue.EventDeferred:
		c.Deferred = 1
	case queue.EventBounced, queue.EventExpired:
		c.Bounced = 1
	case queue.EventComplained:
		c.Complained = 1
	case queue.EventUnsubscribed:
		c.Unsubscribed = 1
	default:
		return
	}
	n := ev.Time.Unix() / int64(bucket/time.Second)
	now := t.now().Unix() / int64(bucket/time.Second)
	if n <= now-int64(buckets) || n > now+1 {
		return
	}
	k := Key{Provider: ProviderOf(ev.Recipient, ev.RemoteMTA), Stream: ev.Stream, SenderDomain: domainOf(ev.From)}
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.m[k]
	if r == nil {
		if len(t.m) >= MaxKeys {
			k.SenderDomain = "other"
			r = t.m[k]
		}
		if r == nil {
			r = &ring{}
			t.m[k] = r
		}
	}
	i := int(n % int64(buckets))
	if r.starts[i] != n {
		r.starts[i], r.counts[i] = n, Counts{}
	}
	r.counts[i].add(c)
}

func domainOf(addr string) string {
	if addr == "" {
		return "<>"
	}
	return strings.ToLower(addr[strings.LastIndexByte(addr, '@')+1:])
}

// Snapshot returns every row with something in the last 24 hours, by
// provider, stream and sender domain.
func (t *Tracker) Snapshot() []Row {
	now := t.now().Unix() / int64(bucket/time.Second)
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Row
	for k, r := range t.m {
		row := Row{Key: k}
		for i := range buckets {
			age := now - r.starts[i]
			if age < 0 || age >= int64(buckets) || r.starts[i] == 0 {
				continue
			}
			row.Day.add(r.counts[i])
			if age < int64(hourSpan) {
				row.Hour.add(r.counts[i])
			}
		}
		if row.Day == (Counts{}) {
			delete(t.m, k)
			continue
		}
		row.ComplaintRate1h, row.ComplaintRate24h = row.Hour.ComplaintRate(), row.Day.ComplaintRate()
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b Row) int {
		return strings.Compare(a.Provider+"\x00"+a.Stream+"\x00"+a.SenderDomain, b.Provider+"\x00"+b.Stream+"\x00"+b.SenderDomain)
	})
	return out
}

// ByProvider sums rows per provider and stream (the metrics' labels).
func ByProvider(rows []Row) []Row {
	sums := map[Key]*Row{}
	var keys []Key
	for _, r := range rows {
		k := Key{Provider: r.Provider, Stream: r.Stream}
		s := sums[k]
		if s == nil {
			s = &Row{Key: k}
			sums[k] = s
			keys = append(keys, k)
		}
		s.Hour.add(r.Hour)
		s.Day.add(r.Day)
	}
	out := make([]Row, 0, len(keys))
	for _, k := range keys {
		s := sums[k]
		s.ComplaintRate1h, s.ComplaintRate24h = s.Hour.ComplaintRate(), s.Day.ComplaintRate()
		out = append(out, *s)
	}
	return out
}
