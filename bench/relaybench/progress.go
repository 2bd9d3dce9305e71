package main

import (
	"fmt"
	"io"
	"time"
)

// progress prints a line every interval to w until stop is closed:
// submitted and received counts and the submission rate since the last line.
func progress(w io.Writer, name string, total int, interval time.Duration, sent func() int64, recv func() int64, stop <-chan struct{}) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastSent, lastRecv int64
	last := time.Now()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			s, r := sent(), recv()
			dt := now.Sub(last).Seconds()
			fmt.Fprintf(w, "[%s] sent %d/%d (%.0f/s)  received %d (%.0f/s)\n",
				name, s, total, float64(s-lastSent)/dt, r, float64(r-lastRecv)/dt)
			lastSent, lastRecv, last = s, r, now
		}
	}
}
