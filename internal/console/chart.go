package console

import (
	"net/http"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/queue"
)

// The overview's chart: accepted, delivered, deferred and bounced per
// minute over the last hour, counted from the newest maxChartScan events
// of the stream (found by bisection, as the timeline), so a busy hour
// costs a bounded time; when those do not reach back an hour, the chart
// says from when it counts.
const (
	chartMinutes = 60
	maxChartScan = 1000
	chartBarW    = 6
	chartRowH    = 40
)

// chartTypes are the chart's rows, in order.
var chartTypes = []queue.EventType{queue.EventQueued, queue.EventDelivered, queue.EventDeferred, queue.EventBounced}

// bar is one minute of one row, in SVG user units.
type bar struct{ X, Y, W, H int }

// chartRow is one event type's hour.
type chartRow struct {
	Type  queue.EventType
	Label string
	Total int
	Max   int
	Bars  []bar
	Y     int // the row's top
	AxisY int // its base line
}

// chart is what the overview draws.
type chart struct {
	Rows    []chartRow
	Width   int
	Height  int
	Partial bool
	Since   time.Time // with Partial: the oldest event counted
	Err     string
}

// hourChart counts the last hour's events per minute and type.
func (c *Console) hourChart(r *http.Request, cl *admin.Client) chart {
	now := c.o.Clock.Now()
	start := now.Add(-chartMinutes * time.Minute)
	ch := chart{Width: chartMinutes * chartBarW, Height: len(chartTypes) * chartRowH}
	counts := make([][chartMinutes]int, len(chartTypes))
	after, err := tailCursor(r.Context(), cl, maxChartScan)
	for page := 0; err == nil && page < 2; page++ { // events arriving meanwhile: one page more
		var p *admin.EventPage
		if p, err = cl.Events(r.Context(), after, nil, scanPage, 0); err != nil {
			break
		}
		if page == 0 && after != "" && len(p.Events) > 0 && p.Events[0].Time.After(start) {
			ch.Partial, ch.Since = true, p.Events[0].Time
		}
		for _, ev := range p.Events {
			m := int(ev.Time.Sub(start) / time.Minute)
			if m < 0 || m >= chartMinutes {
				continue
			}
			for i, t := range chartTypes {
				if ev.Type == t {
					counts[i][m]++
				}
			}
		}
		if len(p.Events) == 0 || p.Next == "" || p.Next == after {
			break
		}
		after = p.Next
	}
	if err != nil {
		ch.Err = err.Error()
		return ch
	}
	labels := map[queue.EventType]string{queue.EventQueued: "accepted", queue.EventDelivered: "delivered", queue.EventDeferred: "deferred", queue.EventBounced: "bounced"}
	for i, t := range chartTypes {
		row := chartRow{Type: t, Label: labels[t], Y: i * chartRowH, AxisY: i*chartRowH + chartRowH - 1}
		for _, n := range counts[i] {
			row.Total += n
			row.Max = max(row.Max, n)
		}
		for m, n := range counts[i] {
			if n == 0 {
				continue
			}
			h := max(1, n*(chartRowH-6)/row.Max)
			row.Bars = append(row.Bars, bar{X: m * chartBarW, Y: row.Y + chartRowH - 2 - h, W: chartBarW - 1, H: h})
		}
		ch.Rows = append(ch.Rows, row)
	}
	return ch
}
