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
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return fmt.Errorf("not inside the relayq module")
	}
	relayqBin = filepath.Join(dir, "relayq")
	cmd := exec.Command("go", "build", "-o", relayqBin, "./cmd/relayq")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/relayq: %w\n%s", err, out)
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
