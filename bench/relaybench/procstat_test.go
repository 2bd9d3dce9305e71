package main

import (
	"os"
	"testing"
	"time"
)

func TestParseStatus(t *testing.T) {
	data := []byte("Name:\trelayq\nVmHWM:\t   40960 kB\nVmRSS:\t   20480 kB\nRssAnon:\t    8192 kB\nRssFile:\t   12288 kB\n")
	m, err := parseStatus(data)
	if err != nil {
		t.Fatal(err)
	}
	want := memStatus{RSS: 20 << 20, HWM: 40 << 20, RSSAnon: 8 << 20, RSSFile: 12 << 20}
	if m != want {
		t.Fatalf("got %+v, want %+v", m, want)
	}
	if _, err := parseStatus([]byte("Name:\tzombie\n")); err == nil {
		t.Fatal("a status without VmRSS (a zombie) was accepted")
	}
}

func TestParseCPU(t *testing.T) {
	// The command name may hold spaces and parentheses.
	line := "1234 (rel ay) q) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 100 0 0\n"
	got, err := parseCPU([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * time.Second; got != want {
		t.Fatalf("cpu %v, want %v (utime 250 + stime 50 ticks)", got, want)
	}
	if _, err := parseCPU([]byte("1234 (x) S 1 2")); err == nil {
		t.Fatal("a short stat line was accepted")
	}
}

func TestParseWriteBytes(t *testing.T) {
	data := []byte("rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n")
	got, err := parseWriteBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if got != 8192 {
		t.Fatalf("write_bytes %d, want 8192", got)
	}
	if _, err := parseWriteBytes([]byte("rchar: 10\n")); err == nil {
		t.Fatal("an io file without write_bytes was accepted")
	}
}

func TestReadOwnProcess(t *testing.T) {
	m, err := readStatus(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.HWM < m.RSS {
		t.Fatalf("implausible status of this process: %+v", m)
	}
	if _, err := readCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
}
