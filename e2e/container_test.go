package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtptest"
)

// podman runs podman the way these machines need it (see the README's
// "Container" section): runc as the runtime, cgroupfs, and a containers.conf
// without default ulimits; and with storage of the test's own (vfs, no
// mounts, in a temporary directory), so that two runs of the tests at once
// never share a build cache whose layers the other removes.
type podman struct {
	t    *testing.T
	bin  string
	conf string
	// global are the flags every podman command takes.
	global []string
}

// newPodman finds a working podman, or skips the test saying why.
func newPodman(t *testing.T) *podman {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("container test needs root (podman as root)")
	}
	bin, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("no container engine: podman not installed (.ci/run installs it)")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skip("no container engine: runc not installed (.ci/run installs it)")
	}
	conf := filepath.Join(t.TempDir(), "containers.conf")
	if err := os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// podman refuses a runroot over 50 characters: a short name of its own.
	run, err := os.MkdirTemp("", "relayq-pm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	p := &podman{t: t, bin: bin, conf: conf, global: []string{"--runtime", "runc", "--cgroup-manager=cgroupfs",
		"--root", filepath.Join(t.TempDir(), "storage"), "--runroot", run, "--storage-driver", "vfs"}}
	if out, err := p.cmd("info").CombinedOutput(); err != nil {
		t.Skipf("no working container engine: podman info: %v\n%s", err, out)
	}
	return p
}

func (p *podman) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(p.bin, append(slices.Clone(p.global), args...)...)
	cmd.Env = append(cleanEnv(), "CONTAINERS_CONF="+p.conf)
	return cmd
}

// run runs podman and fails the test when it fails.
func (p *podman) run(args ...string) string {
	p.t.Helper()
	out, err := p.cmd(args...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// makeImages runs make image, building relayq's image as relayqImage and
// fakemx's as fakemxImage with p, and removes both when the test ends.
func (p *podman) makeImages(t *testing.T, relayqImage, fakemxImage string) {
	t.Helper()
	build := exec.Command("make", "--no-print-directory", "image", "IMAGE="+relayqImage, "IMAGE_FAKEMX="+fakemxImage,
		"IMAGE_CTX="+filepath.Join(t.TempDir(), "ctx"),
		"IMAGE_BUILD="+p.bin+" "+strings.Join(p.global, " ")+" build --format docker")
	build.Dir = moduleRoot(t)
	build.Env = append(cleanEnv(), "CONTAINERS_CONF="+p.conf)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	t.Cleanup(func() { p.cmd("rmi", "-f", relayqImage, fakemxImage).Run() })
}

// `make image` builds the FROM scratch image; it runs as a non-root user,
// reports healthy through its HEALTHCHECK, and relays mail with its queue on
// the volume.
func TestContainerImageRelaysMail(t *testing.T) {
	p := newPodman(t)
	image := fmt.Sprintf("localhost/relayq-e2e:%d", time.Now().UnixNano())
	p.makeImages(t, image, image+"-fakemx") // make image also builds fakemx's own image

	if user := p.run("image", "inspect", "--format", "{{.Config.User}}", image); user != "65532:65532" {
		t.Errorf("image user %q, want the unprivileged 65532:65532", user)
	}
	if hc := p.run("image", "inspect", "--format", "{{.HealthCheck.Test}}", image); !strings.Contains(hc, "healthcheck") {
		t.Errorf("image health check %q, want relayq healthcheck", hc)
	}

	mx := smtptest.NewServer(t)
	smtpAddr, adminAddr := smtptest.ClosedAddr(t), smtptest.ClosedAddr(t)
	name := strings.NewReplacer("localhost/", "", ":", "-").Replace(image)
	// Host networking: the test reaches the container on loopback, and the
	// container reaches the fake MX there, without a bridge or NAT.
	p.run("run", "-d", "--name", name, "--pull=never", "--network", "host",
		"-e", "RELAYQ_SUBMISSION_LISTEN="+smtpAddr,
		"-e", "RELAYQ_ADMIN_LISTEN="+adminAddr,
		"-e", "RELAYQ_DELIVERY_ROUTES=*="+mx.Addr(),
		"-e", "RELAYQ_DELIVERY_TLS=none",
		"-e", "RELAYQ_HOSTNAME=relay.test",
		"--health-cmd", `["/usr/local/bin/relayq","healthcheck","--admin","`+adminAddr+`"]`,
		image)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := p.cmd("logs", name).CombinedOutput()
			t.Logf("container log:\n%s", out)
		}
		p.cmd("rm", "-f", "-t", "5", name).Run()
	})

	// The health check, as the engine runs it, turns healthy once the
	// relay is up (a bounded poll: start-up time is not assumed).
	if !waitfor.Within(30*time.Second, func() bool { return p.cmd("healthcheck", "run", name).Run() == nil }) {
		out, _ := p.cmd("healthcheck", "run", name).CombinedOutput()
		t.Fatalf("container never became healthy: %s", out)
	}

	c, err := dialClient(smtpAddr)
	if err != nil {
		t.Fatal(err)
	}
	o, line, err := c.send("app@example.org", "rcpt@example.net", testMessage("tok-container"), nil)
	c.close()
	if o != accepted {
		t.Fatalf("submission: %s %q %v", o, line, err)
	}
	mx.WaitFor(t, 20*time.Second, func() bool { return deliveredTokens(mx)["tok-container"] == 1 })

	if out := p.run("exec", name, "/usr/local/bin/relayq", "version"); !strings.HasPrefix(out, "relayq ") {
		t.Errorf("relayq version in the container: %q", out)
	}
	p.run("stop", "-t", "20", name)
	if out := p.run("logs", name); !strings.Contains(out, "relayq stopped") {
		t.Errorf("no graceful stop in the log:\n%s", out)
	}
}
