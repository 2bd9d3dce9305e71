package main

import (
	"strings"
	"testing"
	"time"
)

func TestTagRoundTrip(t *testing.T) {
	sent := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	want := tag{Run: "abc123", Seq: 42, Sent: sent}
	got, err := parseTagLine([]byte(formatTag(want)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Run != want.Run || got.Seq != want.Seq || !got.Sent.Equal(sent) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestParseTagLine(t *testing.T) {
	tests := []struct {
		line    string
		wantSeq int
		noTag   bool
		bad     bool
	}{
		{line: "X-Relaybench: run=r seq=7\r\n", wantSeq: 7},
		{line: "x-relaybench: seq=8 run=r", wantSeq: 8},
		{line: "Received: from x", noTag: true},
		{line: "X-Relaybench-Other: run=r seq=1", noTag: true},
		{line: "no colon at all", noTag: true},
		{line: "X-Relaybench: run=r", bad: true},
		{line: "X-Relaybench: seq=1", bad: true},
		{line: "X-Relaybench: run=r seq=-1", bad: true},
		{line: "X-Relaybench: run=r seq=1 sent=yesterday", bad: true},
	}
	for _, tt := range tests {
		got, err := parseTagLine([]byte(tt.line))
		switch {
		case tt.noTag:
			if err != errNoTag {
				t.Errorf("%q: err %v, want errNoTag", tt.line, err)
			}
		case tt.bad:
			if err == nil || err == errNoTag {
				t.Errorf("%q: err %v, want a parse error", tt.line, err)
			}
		case err != nil:
			t.Errorf("%q: %v", tt.line, err)
		case got.Seq != tt.wantSeq:
			t.Errorf("%q: seq %d, want %d", tt.line, got.Seq, tt.wantSeq)
		}
	}
}

func TestMessageSize(t *testing.T) {
	head := messageHead(tag{Run: "0123456789ab", Seq: 99999, Sent: time.Now()}, "bench@src.relaybench.localhost", "sink@dst.relaybench.localhost")
	if len(head) > headAllowance {
		t.Fatalf("head is %d bytes, over the %d allowance", len(head), headAllowance)
	}
	for _, size := range []int{1 << 10, 20 << 10, 20 << 20} {
		got := len(head) + len(bodyFor(size))
		if got > size || got < size-len(fillerLine)-headAllowance {
			t.Errorf("size %d: message is %d bytes", size, got)
		}
	}
	if !strings.HasSuffix(string(head), "\r\n\r\n") {
		t.Error("head does not end with an empty line")
	}
}

func FuzzParseTagLine(f *testing.F) {
	f.Add([]byte("X-Relaybench: run=r seq=7 sent=2026-01-02T03:04:05Z\r\n"))
	f.Add([]byte("Received: by relay"))
	f.Add([]byte("X-Relaybench: seq=99999999999999999999 run=x"))
	f.Fuzz(func(t *testing.T, line []byte) {
		got, err := parseTagLine(line)
		if err == nil && (got.Run == "" || got.Seq < 0) {
			t.Fatalf("accepted %q as %+v", line, got)
		}
	})
}
