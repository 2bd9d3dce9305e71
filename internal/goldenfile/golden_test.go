package goldenfile

import (
	"os"
	"path/filepath"
	"testing"
)

// Check passes on the file's exact bytes and fails on any other.
func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.golden")
	if err := os.WriteFile(path, []byte("a\r\nb\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Check(t, path, []byte("a\r\nb\r\n"))
	var ft fakeT
	Check(&ft, path, []byte("a\nb\n"))
	if !ft.failed {
		t.Fatal("LF where the file has CRLF passed")
	}
}

// fakeT records a failure instead of ending the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true }
