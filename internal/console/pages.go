package console

import (
	"cmp"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/queue"
)

// funcs are the templates' helpers; none returns unescaped HTML.
func (c *Console) funcs() template.FuncMap {
	return template.FuncMap{
		// pct shows a rate as a percentage with two decimals.
		"pct": func(f float64) string { return strconv.FormatFloat(f*100, 'f', 2, 64) + " %" },
		// over reports whether a rate is at or past the line.
		"over": func(f, line float64) bool { return f >= line && f > 0 },
		"ago": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return shortDuration(c.o.Clock.Now().Sub(t))
		},
		"left": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return shortDuration(t.Sub(c.o.Clock.Now()))
		},
		"ts": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
		"bytes": func(n int64) string {
			switch {
			case n >= 1<<30:
				return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
			case n >= 1<<20:
				return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
			case n >= 1<<10:
				return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
			}
			return fmt.Sprintf("%d B", n)
		},
		"inc": func(i int) int { return i + 1 },
		"query": func(kv ...string) string {
			v := url.Values{}
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i+1] != "" {
					v.Set(kv[i], kv[i+1])
				}
			}
			return v.Encode()
		},
	}
}

// shortDuration is d to the second, "3m20s", or "-" prefixed when past.
func shortDuration(d time.Duration) string {
	if d < 0 {
		return "-" + shortDuration(-d)
	}
	if d >= 48*time.Hour {
		return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
	}
	return d.Round(time.Second).String()
}

// overviewData is the overview page.
type overviewData struct {
	Stats       *admin.QueueStats
	Queued      int
	Deferred    int
	Scheduled   int
	Suspensions int
	Paces       int
	Chart       *chart // nil for the read token, which reads no events
	// Acceptance is each provider's figures; nil when relayq keeps none.
	Acceptance *admin.DeliverabilityAnswer
}

// overview answers GET /: the queue's counts, age and health.
func (c *Console) overview(w http.ResponseWriter, r *http.Request, se *session) {
	if r.URL.Path != "/" {
		c.refuse(w, r, se, http.StatusNotFound, "No such page: "+r.URL.Path)
		return
	}
	cl := c.client(se.token)
	st, err := cl.Stats(r.Context())
	if err != nil {
		c.fail(w, r, se, err)
		return
	}
	d := overviewData{Stats: st, Queued: st.Recipients[queue.StatusQueued], Deferred: st.Recipients[queue.StatusDeferred], Scheduled: st.Recipients[queue.StatusScheduled]}
	if sh, err := cl.Shaping(r.Context()); err == nil { // 503 without shaping: none shown
		d.Suspensions, d.Paces = len(sh.Suspensions), len(sh.Paces)
	}
	if a, err := cl.Deliverability(r.Context()); err == nil { // 503 when not kept: none shown
		d.Acceptance = a
	}
	// Both roles read events (counts of outcomes are metadata).
	ch := c.hourChart(r, cl)
	d.Chart = &ch
	c.render(w, r, se, http.StatusOK, "overview", "Overview", d)
}

// destRow is one domain of the destinations page.
type destRow struct {
	admin.ShapeRow
	Suspended *admin.Suspension
}

// destData is the destinations page.
type destData struct {
	Status      string
	Sort        string
	Buckets     []string
	Rows        []destRow
	Total       admin.ShapeRow
	Suspensions []admin.Suspension
	Paces       []admin.Pace
	InFlight    []admin.InFlight
	NoShaping   string
}

// destinations answers GET /ui/destinations?status=&sort=: the queue's
// shape by domain and age with each domain's suspension, then the
// suspensions and learned rates in force.
func (c *Console) destinations(w http.ResponseWriter, r *http.Request, se *session) {
	q := r.URL.Query()
	d := destData{Status: q.Get("status"), Sort: q.Get("sort")}
	cl := c.client(se.token)
	shape, err := cl.Shape(r.Context(), d.Status, 0)
	if err != nil {
		c.fail(w, r, se, err)
		return
	}
	sh, err := cl.Shaping(r.Context())
	if err != nil {
		d.NoShaping = err.Error()
		sh = &admin.ShapingList{}
	}
	d.Buckets, d.Total, d.Suspensions, d.Paces, d.InFlight = shape.Buckets, shape.Total, sh.Suspensions, sh.Paces, sh.InFlight
	byDomain := map[string]*admin.Suspension{}
	for i, s := range sh.Suspensions {
		if name, ok := strings.CutPrefix(s.Scope, "domain:"); ok {
			byDomain[name] = &sh.Suspensions[i]
		}
	}
	for _, row := range shape.Rows {
		d.Rows = append(d.Rows, destRow{ShapeRow: row, Suspended: byDomain[row.Domain]})
	}
	sortRows(d.Rows, d.Sort)
	c.render(w, r, se, http.StatusOK, "destinations", "Destinations", d)
}

// sortRows orders the shape: by total (default), domain, or the oldest
// column first.
func sortRows(rows []destRow, by string) {
	slices.SortStableFunc(rows, func(a, b destRow) int {
		switch by {
		case "domain":
			return strings.Compare(a.Domain, b.Domain)
		case "oldest":
			for i := len(a.Counts) - 1; i >= 0 && i < len(b.Counts); i-- {
				if n := cmp.Compare(b.Counts[i], a.Counts[i]); n != 0 {
					return n
				}
			}
		}
		return cmp.Or(cmp.Compare(b.Total, a.Total), strings.Compare(a.Domain, b.Domain))
	})
}

// supData is the suppression page.
type supData struct {
	Q       string
	Entries []queue.Suppression
	More    int
}

// maxSuppressionRows bounds the page; the search narrows it.
const maxSuppressionRows = 200

// suppressions answers GET /ui/suppressions?q=: entries containing q.
func (c *Console) suppressions(w http.ResponseWriter, r *http.Request, se *session) {
	d := supData{Q: strings.TrimSpace(r.URL.Query().Get("q"))}
	all, err := c.client(se.token).Suppressions(r.Context())
	if err != nil {
		c.fail(w, r, se, err)
		return
	}
	for _, e := range all {
		if d.Q != "" && !strings.Contains(strings.ToLower(e.Address), strings.ToLower(d.Q)) {
			continue
		}
		if len(d.Entries) == maxSuppressionRows {
			d.More++
			continue
		}
		d.Entries = append(d.Entries, e)
	}
	c.render(w, r, se, http.StatusOK, "suppressions", "Suppressions", d)
}

// StatusChoices are the statuses the shape can be narrowed to.
func (destData) StatusChoices() []string { return []string{"queued", "deferred", "scheduled"} }
