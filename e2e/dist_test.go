package e2e

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `make dist` builds the same bytes from a copy at another path: the
// release binaries can be checked by anyone against SHA256SUMS. The binary
// is static and says the version it was given.
func TestMakeDistIsReproducibleAndStatic(t *testing.T) {
	for _, tool := range []string{"make", "git", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	root := moduleRoot(t)
	clone := copyTree(t, root, filepath.Join(t.TempDir(), "elsewhere", "relayq"))
	// Both builds get the same stamp; what is compared is the build itself.
	stamp := []string{"VERSION=v9.9.9-test", "COMMIT=0123456789abcdef", "BUILDDATE=2026-01-02T03:04:05Z", "DIST_ARCHES=amd64"}
	sums := func(dir, dist string) string {
		t.Helper()
		cmd := exec.Command("make", append([]string{"--no-print-directory", "dist", "DIST=" + dist}, stamp...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make dist in %s: %v\n%s", dir, err, out)
		}
		b, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	distA := filepath.Join(t.TempDir(), "a")
	a := sums(root, distA)
	b := sums(clone, filepath.Join(t.TempDir(), "b"))
	if a != b || !strings.Contains(a, "relayq-v9.9.9-test-linux-amd64") {
		t.Fatalf("two builds differ:\n%s\n%s", a, b)
	}
	bin := filepath.Join(distA, "relayq-v9.9.9-test-linux-amd64")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the release binary is dynamically linked")
		}
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Skipf("cannot run the amd64 binary here: %v", err)
	}
	if want := "relayq v9.9.9-test commit 0123456789abcdef built 2026-01-02T03:04:05Z"; !bytes.HasPrefix(out, []byte(want)) {
		t.Errorf("version = %q, want it to start with %q", out, want)
	}
	// fakemx ships beside relayq, with its checksum, and says its version.
	if !strings.Contains(a, "fakemx-v9.9.9-test-linux-amd64") {
		t.Errorf("SHA256SUMS has no fakemx:\n%s", a)
	}
	out, err = exec.Command(filepath.Join(distA, "fakemx-v9.9.9-test-linux-amd64"), "--version").Output()
	if want := "fakemx v9.9.9-test commit 0123456789abcdef"; err != nil || !bytes.HasPrefix(out, []byte(want)) {
		t.Errorf("fakemx --version = %q (%v), want it to start with %q", out, err, want)
	}
}

// moduleRoot is the directory of go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// copyTree copies the files git knows of (tracked and new, not ignored)
// from root to dst, as a clone of the working tree would have them.
func copyTree(t *testing.T, root, dst string) string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			continue // deleted in the working tree
		}
		p := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
