package tenant

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Windows: a quota counts messages per calendar minute, day and month in
// UTC (not rolling): a window's count starts at 0 when the window starts,
// so "600 per minute" admits 600 in 10:04 and 600 more from 10:05:00. A
// calendar window is what an operator can check against an invoice or a
// provider's daily limit, and its counter is one number per window.
type window struct {
	kind  byte // 'm' minute, 'd' day, 'M' month
	limit int
}

// start is the start of the window of kind holding t, and the next's.
func windowOf(kind byte, t time.Time) (start, next time.Time) {
	t = t.UTC()
	switch kind {
	case 'm':
		start = t.Truncate(time.Minute)
		return start, start.Add(time.Minute)
	case 'd':
		start = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 0, 1)
	}
	start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 1, 0)
}

// counterName names tenant's counter of the window of kind holding t:
// "tenant/m/2026-12-06T10:04", "tenant/d/2026-12-06", "tenant/M/2026-12".
func counterName(tenant string, kind byte, t time.Time) string {
	b := make([]byte, 0, len(tenant)+20)
	b = append(append(append(b, tenant...), '/', kind), '/')
	return string(t.UTC().AppendFormat(b, layoutOf(kind)))
}

// layoutOf is the time layout of a window kind's counter names.
func layoutOf(kind byte) string {
	switch kind {
	case 'm':
		return "2006-01-02T15:04"
	case 'd':
		return "2006-01-02"
	case 'M':
		return "2006-01"
	}
	return ""
}

// quotaName is the config key of a window kind's quota.
func quotaName(kind byte) string {
	switch kind {
	case 'm':
		return "per_minute"
	case 'd':
		return "per_day"
	}
	return "per_month"
}

// Taken is one message counted against its tenant's quotas.
type Taken struct {
	// At is when the message is counted: the submission time, or with
	// over: hold the start of the first window with room (its release).
	At time.Time
	// Counters are the names of the counters it was added to, for the
	// store to persist with the message.
	Counters []string
}

// Refused says a message over quota was refused: Quota names the full
// quota ("per_day"), Opens is when it has room again.
type Refused struct {
	Quota string
	Opens time.Time
}

// Until is when the quota has room again.
func (r *Refused) Until() time.Time { return r.Opens }

func (r *Refused) Error() string {
	return "quota " + r.Quota + " used up until " + r.Opens.UTC().Format(time.RFC3339)
}

// maxHoldSteps bounds how many full windows a held message skips.
const maxHoldSteps = 100000

// Counter counts messages per tenant and window, in memory; the store
// persists what it counted with each message, and New gives the counts
// back at start. Safe for concurrent use.
type Counter struct {
	mu  sync.Mutex
	n   map[string]int
	dir atomic.Pointer[Directory]
}

// NewCounterWith is NewCounter(nil) applying d's quotas.
func NewCounterWith(d *Directory) *Counter {
	c := NewCounter(nil)
	c.SetDirectory(d)
	return c
}

// SetDirectory sets the directory whose quotas Admit applies (on start
// and on every reload).
func (c *Counter) SetDirectory(d *Directory) { c.dir.Store(d) }

// Directory is the directory SetDirectory set last.
func (c *Counter) Directory() *Directory { return c.dir.Load() }

// Admit is Take with tenant's quotas from the directory: when the message
// is counted, and the counters it was added to.
func (c *Counter) Admit(tenant string, now time.Time) (time.Time, []string, error) {
	t, _ := c.dir.Load().Get(tenant)
	tk, err := c.Take(tenant, t.Quotas, now)
	return tk.At, tk.Counters, err
}

// NewCounter starts from counts loaded from the store (nil for none).
func NewCounter(loaded map[string]uint64) *Counter {
	c := &Counter{n: map[string]int{}}
	for k, v := range loaded {
		c.n[k] = int(min(v, 1<<31))
	}
	return c
}

// Take counts one message of tenant under q submitted at now. Within
// every quota it is counted now; past one, with over: refuse it is not
// counted and a *Refused says until when; with over: hold it is counted
// in the first windows with room, At their start. Without quotas it
// counts nothing and returns now.
func (c *Counter) Take(tenant string, q Quotas, now time.Time) (Taken, error) {
	ws := q.windows()
	if len(ws) == 0 {
		return Taken{At: now}, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	at := now
	names := make([]string, len(ws))
	for range maxHoldSteps {
		full, opens := c.full(tenant, ws, at, names)
		if full == "" {
			break
		}
		if q.Over == Refuse {
			return Taken{}, &Refused{Quota: full, Opens: opens}
		}
		at = opens
	}
	for _, name := range names {
		c.n[name]++
	}
	return Taken{At: at, Counters: names}, nil
}

// full names the first quota whose window at t is full, and when it ends;
// it fills names with the counters of the windows at t.
func (c *Counter) full(tenant string, ws []window, t time.Time, names []string) (string, time.Time) {
	for i, w := range ws {
		names[i] = counterName(tenant, w.kind, t)
		if c.n[names[i]] >= w.limit {
			_, next := windowOf(w.kind, t)
			return quotaName(w.kind), next
		}
	}
	return "", time.Time{}
}

// Undo takes back the counts of a message that was not stored after all.
func (c *Counter) Undo(counters []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range counters {
		if c.n[name] > 0 {
			c.n[name]--
		}
	}
}

// Used is tenant's count in the windows holding now: per minute, day and
// month.
func (c *Counter) Used(tenant string, now time.Time) (minute, day, month int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[counterName(tenant, 'm', now)], c.n[counterName(tenant, 'd', now)], c.n[counterName(tenant, 'M', now)]
}

// Current reports whether a counter name is of a window that has not
// ended at now (the store prunes the others).
func Current(name string, now time.Time) bool {
	i := strings.LastIndexByte(name, '/')
	if i < 2 || name[i-2] != '/' {
		return false
	}
	kind := name[i-1]
	layout := layoutOf(kind)
	if layout == "" {
		return false
	}
	t, err := time.Parse(layout, name[i+1:])
	if err != nil {
		return false
	}
	_, next := windowOf(kind, t)
	return next.After(now)
}

func (q Quotas) windows() []window {
	all := [3]window{{'m', q.PerMinute}, {'d', q.PerDay}, {'M', q.PerMonth}}
	ws := all[:0]
	for _, w := range all {
		if w.limit > 0 {
			ws = append(ws, w)
		}
	}
	return ws
}
