package egress

import (
	"errors"
	"fmt"
	"time"
)

// Warmup is a source's warm-up: per destination scope (a provider, else
// a domain) a daily cap that rises day by day, Schedule[0] on the first
// day, until the schedule ends and the source is warm.
type Warmup struct {
	Schedule []int
	// Started is the first day (UTC) the source may send under the
	// schedule; before it the source sends nothing.
	Started time.Time
}

// DefaultSchedule is the built-in schedule ("schedule: default"): the
// daily volumes of Twilio SendGrid's recommended manual IP warm-up
// (https://www.twilio.com/docs/sendgrid/concepts/reputation/warm-up-ip-addresses
// points to it; the figures as reproduced, day by day, at
// https://support.sitevibes.com/support/solutions/articles/47001271345-understanding-our-ip-warming-process:
// 50, 100, 250, 500, 1,000, 2,500, 5,000, 7,500, 10,000, 15,000, 20,000,
// 30,000, 40,000, 55,000, 70,000, 100,000). SendGrid's figures are per
// IP across all receivers; relayq applies each day's figure per
// provider, which is the same for a list dominated by one provider and
// more generous for a mixed one.
var DefaultSchedule = []int{50, 100, 250, 500, 1000, 2500, 5000, 7500, 10000, 15000, 20000, 30000, 40000, 55000, 70000, 100000}

// CheckSchedule refuses a schedule that is empty, has a cap below 1, or a
// day whose cap is below the day before's (a warm-up only rises); the
// error names the day's index.
func CheckSchedule(s []int) error {
	if len(s) == 0 {
		return errors.New("empty: give the daily caps, day 1 first, or default")
	}
	for i, n := range s {
		switch {
		case n < 1:
			return fmt.Errorf("schedule[%d]: %d: a daily cap is at least 1", i, n)
		case i > 0 && n < s[i-1]:
			return fmt.Errorf("schedule[%d]: %d is below the day before's %d: the days are out of order (a warm-up only rises)", i, n, s[i-1])
		}
	}
	return nil
}

// Progress is a source's warm-up with one destination scope: the day it
// is on (1 is Schedule[0]), the UTC date Count is of, how many messages
// it sent that date, and whether the scope throttled it that date.
type Progress struct {
	Day   int    `json:"day"`
	Date  string `json:"date"` // YYYY-MM-DD, UTC
	Count int    `json:"count"`
	Held  bool   `json:"held,omitempty"`
}

// At is p brought to now's UTC date. The rule: a new date moves to the
// next day of the schedule only if the last date it sent on had no
// throttle signal from the scope (good answers advance, throttling holds
// it), and only once per date it sent on, however many dates passed (a
// source that did not send does not warm up). A zero Progress starts on
// day 1.
func (p Progress) At(now time.Time) Progress {
	today := now.UTC().Format(time.DateOnly)
	switch {
	case p.Day == 0:
		return Progress{Day: 1, Date: today}
	case p.Date == today:
		return p
	}
	if p.Count > 0 && !p.Held {
		p.Day++
	}
	return Progress{Day: p.Day, Date: today}
}

// Cap is the day's cap of w for p (at now's date); warm reports that the
// schedule is over (no cap). Before Started nothing may be sent.
func (w *Warmup) Cap(p Progress, now time.Time) (limit int, warm bool) {
	if now.Before(w.Started) {
		return 0, false
	}
	if p.Day > len(w.Schedule) {
		return 0, true
	}
	return w.Schedule[max(p.Day, 1)-1], false
}
