package testfs

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// CrashFS is a FUSE pass-through file system that forgets, at a power
// cut, everything not yet synced: the data written to a file since its
// last fsync or fdatasync, and the entries created, renamed or removed in
// a directory since that directory's last fsync. Cut drops the difference
// and refuses all further I/O with EIO; PowerOn mounts what the disk
// kept, as a machine boots.
//
// The file system is served by a process of its own (the test binary
// again, see init): a process that reads a file it maps from a FUSE mount
// it serves itself deadlocks as soon as the Go runtime stops the world
// while a page fault waits for the server's goroutines.
type CrashFS struct {
	t   testing.TB
	mnt string
	cmd *exec.Cmd

	mu      sync.Mutex // one command at a time
	in      io.WriteCloser
	replies chan string

	downMu sync.Mutex
	down   chan struct{}
}

// Environment variables that turn a test binary into a crash file system
// server (init).
const (
	envServe   = "RELAYQ_TESTFS_CRASH_MOUNT"
	envBacking = "RELAYQ_TESTFS_CRASH_BACKING"
)

func init() {
	mnt := os.Getenv(envServe)
	if mnt == "" {
		return
	}
	if err := serveCrashFS(mnt, os.Getenv(envBacking), os.Stdin, os.Stdout); err != nil {
		fmt.Println("err", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Crash mounts a new crash file system over an empty directory and
// returns it; it is unmounted when the test ends. Without root or
// /dev/fuse the test is skipped, with the reason, except under CI, where
// it fails: CI runs as root and must run what needs this.
func Crash(t testing.TB) *CrashFS {
	t.Helper()
	RequireFUSE(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &CrashFS{t: t, mnt: t.TempDir(), replies: make(chan string, 1), down: make(chan struct{})}
	c.cmd = exec.Command(self, "-test.run=^$")
	c.cmd.Env = append(os.Environ(), envServe+"="+c.mnt, envBacking+"="+t.TempDir())
	c.cmd.Stderr = os.Stderr
	// No Pdeathsig: Linux ties it to the thread that forked, which the Go
	// runtime may retire. The server ends when its stdin does, which a
	// dying test closes.
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start the crash file system: %v", err)
	}
	go c.read(out)
	t.Cleanup(func() {
		c.in.Close()
		done := make(chan struct{})
		go func() { c.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			c.cmd.Process.Kill()
			<-done
		}
		syscall.Unmount(c.mnt, syscall.MNT_DETACH)
	})
	if r := c.reply(); r != "ok" {
		t.Fatalf("mount the crash file system: %s", r)
	}
	return c
}

// read sorts the server's lines: "down" closes Down, the rest are
// replies.
func (c *CrashFS) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "down" {
			c.downMu.Lock()
			close(c.down)
			c.downMu.Unlock()
			continue
		}
		c.replies <- line
	}
	close(c.replies)
}

func (c *CrashFS) reply() string {
	select {
	case r, ok := <-c.replies:
		if !ok {
			return "err the crash file system's server is gone"
		}
		return r
	case <-time.After(time.Minute):
		return "err no reply from the crash file system within a minute"
	}
}

// do sends one command and returns the value of its "ok" reply.
func (c *CrashFS) do(cmd string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := fmt.Fprintln(c.in, cmd); err != nil {
		return "", err
	}
	r := c.reply()
	if v, ok := strings.CutPrefix(r, "ok"); ok {
		return strings.TrimSpace(v), nil
	}
	return "", fmt.Errorf("crashfs %s: %s", cmd, strings.TrimPrefix(r, "err "))
}

func (c *CrashFS) must(cmd string) string {
	v, err := c.do(cmd)
	if err != nil {
		c.t.Fatal(err)
	}
	return v
}

// RequireFUSE skips t (fails it under CI) unless FUSE can be mounted:
// /dev/fuse exists and the test runs as root.
func RequireFUSE(t testing.TB) {
	t.Helper()
	why := ""
	if _, err := os.Stat("/dev/fuse"); err != nil {
		why = "no /dev/fuse"
	} else if os.Geteuid() != 0 {
		why = "not root"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("the crash file system cannot be mounted (%s); CI must run it as root with /dev/fuse", why)
	}
	t.Skipf("skipped: the crash file system needs root and /dev/fuse (%s)", why)
}

// Dir is the mount point: the directory whose files are on the crash
// file system.
func (c *CrashFS) Dir() string { return c.mnt }

// Down is closed when the power is cut.
func (c *CrashFS) Down() <-chan struct{} {
	c.downMu.Lock()
	defer c.downMu.Unlock()
	return c.down
}

// IsDown reports whether the power is cut; after an operation failed
// with EIO, whether that was the cut.
func (c *CrashFS) IsDown() bool { return c.must("state") == "off" }

// Syncs counts the sync calls (fsync, fdatasync, directory fsync) since
// the last power-on.
func (c *CrashFS) Syncs() int {
	n, _ := strconv.Atoi(c.must("syncs"))
	return n
}

// CutAtSync cuts the power at the n-th sync call from now (1: the next):
// that call is not carried out and fails with EIO. n <= 0 disarms it.
func (c *CrashFS) CutAtSync(n int) { c.must(fmt.Sprintf("cutsync %d", n)) }

// CutAtOp cuts the power at the n-th changing operation from now (a
// write, sync, create, mkdir, rename, removal, truncation or
// allocation): a moment under load that a test can name and repeat. n <=
// 0 disarms it.
func (c *CrashFS) CutAtOp(n int) { c.must(fmt.Sprintf("cutop %d", n)) }

// CutAt cuts the power at the n-th operation op ("write", "fsync",
// "fsyncdir", "create", "mkdir", "rename", "unlink", "rmdir", "truncate",
// "allocate") on a path, relative to Dir, that ends in suffix; that
// operation is not carried out. n <= 0 disarms it.
func (c *CrashFS) CutAt(op, suffix string, n int) {
	c.must(fmt.Sprintf("cutat %s *%s %d", op, suffix, n))
}

// Tear makes the next cuts tear the last unsynced write: a number of its
// last page's sectors (at least one, not all), drawn from seed, reach the
// disk. Untorn stops it.
func (c *CrashFS) Tear(seed int64) { c.must(fmt.Sprintf("tear %d", seed)) }

// Untorn makes cuts lose the last unsynced write whole again.
func (c *CrashFS) Untorn() { c.must("tear off") }

// Cut cuts the power now.
func (c *CrashFS) Cut() { c.must("cut") }

// PowerOn unmounts the file system after a cut and mounts what its disk
// kept. Whoever had files open on it must be gone (killed, or the files
// closed) first.
func (c *CrashFS) PowerOn() error {
	// The notice of a cut that an operation hit may still be on its
	// way when the operation's EIO has reached the test.
	select {
	case <-c.Down():
	case <-time.After(10 * time.Second):
		return fmt.Errorf("crashfs: PowerOn while the power is on")
	}
	if _, err := c.do("poweron"); err != nil {
		return err
	}
	c.downMu.Lock()
	c.down = make(chan struct{})
	c.downMu.Unlock()
	return nil
}
