package admin

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/relayq/relayq/queue"
)

// fakeAccount is an Accountability whose check returns what run does.
type fakeAccount struct {
	run     func() (queue.AccountReport, error)
	overdue int
}

func (f fakeAccount) Check() (queue.AccountReport, error) { return f.run() }
func (f fakeAccount) Overdue() int                        { return f.overdue }

// POST /api/v1/queue/accountability runs the relay's check and returns its
// report; without a check it answers 503, a failing check an error.
func TestAccountabilityAPI(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func() (queue.AccountReport, error)
		want int // findings; -1: an error
	}{
		{"none", nil, -1},
		{"sound", func() (queue.AccountReport, error) { return queue.AccountReport{Checked: 3}, nil }, 0},
		{"found", func() (queue.AccountReport, error) {
			return queue.AccountReport{Checked: 3, Findings: []queue.Finding{{ID: "A", Problem: queue.ProblemNoEntry}}}, nil
		}, 1},
		{"failed", func() (queue.AccountReport, error) { return queue.AccountReport{}, errors.New("disk gone") }, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "tok")
			o := Options{Store: e.store, Token: "tok", Logger: quiet}
			if tc.run != nil {
				o.Accountability = fakeAccount{run: tc.run}
			}
			srv := httptest.NewServer(NewHandler(o))
			defer srv.Close()
			c := &Client{BaseURL: srv.URL, Token: "tok"}
			rep, err := c.Accountability(context.Background())
			switch {
			case tc.want < 0 && err == nil:
				t.Fatalf("no error: %+v", rep)
			case tc.want >= 0 && (err != nil || len(rep.Findings) != tc.want || rep.Checked != 3):
				t.Fatalf("report %+v, %v; want %d findings of 3 checked", rep, err, tc.want)
			}
		})
	}
}

// The queue stats carry what the last background pass found.
func TestStatsShowOverdue(t *testing.T) {
	e := newEnv(t, "tok")
	srv := httptest.NewServer(NewHandler(Options{Store: e.store, Token: "tok", Logger: quiet, Accountability: fakeAccount{overdue: 2}}))
	defer srv.Close()
	st, err := (&Client{BaseURL: srv.URL, Token: "tok"}).Stats(context.Background())
	if err != nil || st.Overdue != 2 {
		t.Fatalf("stats %+v, %v; want 2 overdue", st, err)
	}
}
