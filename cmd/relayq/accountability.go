package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/queue"
)

// accountable is what the relay holds waiting recipients to: due by their
// message's max_age (plus the last retry's longest delay, which may start
// just before it). The retry schedule's own bound (MaxWait) is left off:
// parking and traffic shaping may postpone mail past the retry schedule
// on purpose.
func accountable(r config.Retry, now time.Time) queue.Accountable {
	a := queue.Accountable{Now: now}
	if r.MaxAge > 0 {
		a.MaxAge = r.MaxAge + r.MaxDelay + r.Jitter
	}
	return a
}

// accountWatch is the relay's accountability check: run in the
// background (watch), on demand (Check, for the admin API), and what its
// last complete pass found (Overdue, for the console).
type accountWatch struct {
	st      *queue.Store
	retry   config.Retry
	log     *slog.Logger
	m       *metrics
	overdue atomic.Int64
}

// account is the app's accountability check (one for the background and
// the admin API, so that the console sees the background's findings).
func (a *app) account() *accountWatch {
	if a.acct == nil {
		a.acct = &accountWatch{st: a.store, retry: a.conf.cfg.Retry, log: a.log, m: a.metrics}
	}
	return a.acct
}

// Check runs the check over the whole queue now.
func (w *accountWatch) Check() (queue.AccountReport, error) {
	return wholeAccount(w.st, w.retry, w.log)
}

// Overdue is what the last complete background pass found.
func (w *accountWatch) Overdue() int { return int(w.overdue.Load()) }

// watch runs the check in the background, one slice of
// queue.AccountSlice messages every queue.AccountEvery, round and round,
// until ctx ends: each finding is logged with its queue ID and was
// rescheduled by the check; the metrics count them.
func (w *accountWatch) watch(ctx context.Context) {
	tick := time.NewTicker(queue.AccountEvery)
	defer tick.Stop()
	after, pass := "", 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rep, err := w.st.Admin().Accountability(after, queue.AccountSlice, accountable(w.retry, time.Now()))
		if err != nil {
			if !errors.Is(err, queue.ErrClosed) {
				w.log.Warn("queue: accountability check failed", "err", err)
			}
			continue
		}
		logFindings(w.log, rep.Findings)
		pass += len(rep.Findings)
		w.m.m.Accounted(len(rep.Findings), pass, rep.Next == "")
		if rep.Next == "" {
			w.overdue.Store(int64(pass))
			pass = 0
		}
		after = rep.Next
	}
}

func logFindings(log *slog.Logger, fs []queue.Finding) {
	for _, f := range fs {
		log.Warn("queue: message without a future, rescheduled", "id", f.ID, "rcpt", f.Address, "problem", f.Problem)
	}
}

// wholeAccount runs the check over the whole queue at once, slice by
// slice, and logs what it found.
func wholeAccount(st *queue.Store, r config.Retry, log *slog.Logger) (queue.AccountReport, error) {
	all := queue.AccountReport{Findings: []queue.Finding{}}
	for {
		rep, err := st.Admin().Accountability(all.Next, queue.AccountSlice, accountable(r, time.Now()))
		if err != nil {
			return all, err
		}
		logFindings(log, rep.Findings)
		all.Checked += rep.Checked
		all.Findings = append(all.Findings, rep.Findings...)
		if all.Next = rep.Next; all.Next == "" {
			return all, nil
		}
	}
}

// runAccountability is `relayq queue check --accountability`: the
// relay's check over the whole queue at once, on a stopped relay's file,
// or, when a relay holds the file, by that relay (its admin API, found
// from --config). A finding (repaired) is an error (exit 1), so that a
// script sees that something had gone wrong.
func runAccountability(path, cfgPath string, r config.Retry, asJSON bool, out io.Writer) error {
	var all queue.AccountReport
	st, err := queue.Open(path, queue.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	switch {
	case errors.Is(err, queue.ErrLocked):
		all, err = askRelay(cfgPath)
	case err == nil:
		all, err = wholeAccount(st, r, slog.New(slog.NewTextHandler(io.Discard, nil)))
		st.Close()
	}
	if err != nil {
		return err
	}
	if asJSON {
		if err := printJSON(out, all); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "queue file %s: %d messages checked, %d without a future\n", path, all.Checked, len(all.Findings))
		for _, f := range all.Findings {
			fmt.Fprintf(out, "  %s %s: %s (rescheduled)\n", f.ID, f.Address, f.Problem)
		}
	}
	if n := len(all.Findings); n > 0 {
		return fmt.Errorf("%d %s without a future, rescheduled", n, pluralize(n, "finding", "findings"))
	}
	return nil
}

// askRelay has the running relay run the check (its admin API, as the
// other queue commands find it from the config).
func askRelay(cfgPath string) (queue.AccountReport, error) {
	a := adminFlags{config: cfgPath}
	cl, err := a.client(5 * time.Minute)
	if err != nil {
		return queue.AccountReport{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return cl.Accountability(ctx)
}
