package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// make man writes a page for relayq and for every command of the tables,
// from their help text, and roff reads each without a warning.
func TestManPagesForEveryCommand(t *testing.T) {
	dir := t.TempDir()
	if err := manCmd([]string{"--dir", dir}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"relayq.1"}
	for _, name := range topWords() {
		want = append(want, "relayq-"+name+".1")
	}
	for _, name := range queueWords() {
		want = append(want, "relayq-queue-"+name+".1")
	}
	for _, page := range want {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil {
			t.Errorf("no page %s: %v", page, err)
			continue
		}
		if !strings.HasPrefix(string(b), ".TH RELAYQ") || !strings.Contains(string(b), ".SH SYNOPSIS") {
			t.Errorf("%s:\n%s", page, b)
		}
		groff, err := exec.LookPath("groff")
		if err != nil {
			continue
		}
		out, err := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z", filepath.Join(dir, page)).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("groff %s: %v\n%s", page, err, out)
		}
	}
}
