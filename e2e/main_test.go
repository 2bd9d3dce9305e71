package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// relayqBin is the path of the relayq binary built for this test run.
var relayqBin string

// TestMain builds cmd/relayq into a temporary directory, so the tests run
// exactly what `go build` produces from this tree and not some stale binary.
//
// Under -short it runs no test at all: every test here starts the binary (or
// Postfix, redis-server, a browser), which is what -short leaves out. The
// decision is made once, here, so no test has to repeat it.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped under -short: every test runs the built relayq binary")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "relayq-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	code := 1
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func build(dir string) error {
	relayqBin = filepath.Join(dir, "relayq")
	return goBuild(relayqBin)
}

// goBuild builds cmd/relayq into out, with flags (a build tag) before the
// package.
func goBuild(out string, flags ...string) error {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		return fmt.Errorf("not inside the relayq module")
	}
	args := append(append([]string{"build", "-o", out}, flags...), "./cmd/relayq")
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Dir(mod)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

// TestShortIsDecidedOnce holds the package to TestMain's rule: no test calls
// testing.Short itself, so a new test cannot forget the skip or word it
// differently.
func TestShortIsDecidedOnce(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if name == "main_test.go" {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "testing.Short()"); n > 0 {
			t.Errorf("%s calls testing.Short() %d times; TestMain alone decides what -short leaves out", name, n)
		}
	}
}
