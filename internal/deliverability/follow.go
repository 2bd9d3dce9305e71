package deliverability

import (
	"context"
	"log/slog"

	"github.com/relayq/relayq/queue"
)

// Source is the event stream (queue.Store's Events() is one).
type Source interface {
	List(q queue.EventQuery) ([]queue.Event, string, error)
	Changed() <-chan struct{}
}

// Follow adds every event of src to t, from the oldest kept on, and then
// each new one as its commit signals, until ctx ends. A read error is
// logged and retried at the next commit.
func Follow(ctx context.Context, src Source, t *Tracker, log *slog.Logger) {
	cursor := ""
	for {
		changed := src.Changed() // taken before reading: no commit is missed
		for {
			evs, last, err := src.List(queue.EventQuery{After: cursor, Limit: 10000})
			if err != nil {
				log.Warn("deliverability: reading events", "err", err)
				break
			}
			for _, ev := range evs {
				t.Add(ev)
			}
			if last == "" || last == cursor {
				break
			}
			cursor = last
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}
