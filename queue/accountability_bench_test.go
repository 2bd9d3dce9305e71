package queue

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkAccountability100k measures one slice of the accountability
// check (AccountSlice envelopes) over a queue of 100,000 waiting
// messages, all sound: the relay runs one slice a second
// (AccountEvery), so ns/op over 1e9 is the share of one core it costs.
func BenchmarkAccountability100k(b *testing.B) {
	s := benchStore(b, Options{})
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const total, perCommit = 100_000, 5_000
	for start := 0; start < total; start += perCommit {
		err := s.submit(func(w *writeTx) error {
			for i := start; i < start+perCommit; i++ {
				at := base.Add(time.Duration(i) * time.Second)
				env := &Envelope{ID: fmt.Sprintf("%016X0000", i+1), From: "a@example.org", Created: base,
					Recipients: []Recipient{{Address: "r@example.net", Status: StatusDeferred, NextAttempt: at}}}
				if err := w.insert(env, 0, nil, 1<<20); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	a := Accountable{Now: base, MaxWait: 200_000 * time.Second, MaxAge: 300_000 * time.Second}
	after := ""
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		rep, err := s.Admin().Accountability(after, AccountSlice, a)
		if err != nil || len(rep.Findings) != 0 {
			b.Fatalf("Accountability: %+v, %v", rep.Findings, err)
		}
		after = rep.Next
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(AccountEvery.Nanoseconds())*100, "%cpu")
}
