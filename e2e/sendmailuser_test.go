package e2e

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
	"github.com/relayq/relayq/smtptest"
)

// install is a relayq installed as a package installs it: the binary and
// the configuration readable by every user, the TLS and DKIM keys it names
// readable by root alone (0600), the DKIM key by a path relative to the
// configuration's directory, where the daemon runs.
type install struct {
	bin, etc, cfg string
}

// newInstall lays out an install whose configuration is the relay's with
// submission.tls and dkim added, in a world-readable directory outside
// t.TempDir() (whose parent is 0700), and points r at it.
func newInstall(t *testing.T, r *relay) install {
	t.Helper()
	root, err := os.MkdirTemp("", "relayq-install-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	in := install{bin: filepath.Join(root, "relayq"), etc: filepath.Join(root, "etc")}
	in.cfg = filepath.Join(in.etc, "relayq.yaml")
	if err := os.MkdirAll(filepath.Join(in.etc, "dkim"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, relayqBin, in.bin, 0o755)
	dkimKey := keygen(t, filepath.Join(in.etc, "dkim"), "relay.test", "s1", "ed25519", dkimtest.Records{})
	cert, err := smtptest.NewCert()
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(in.etc, "cert.pem"), filepath.Join(in.etc, "key.pem")
	for f, b := range map[string][]byte{certFile: cert.CertPEM, keyFile: cert.KeyPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dkimKey, 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(r.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("submission:\n"), fmt.Appendf(nil, "submission:\n  tls:\n    cert_file: %q\n    key_file: %q\n", certFile, keyFile), 1)
	rel, _ := filepath.Rel(in.etc, dkimKey)
	b = append(b, dkimSection("relay.test", "s1", rel)...)
	if err := os.WriteFile(in.cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r.cfgPath, r.dir = in.cfg, in.etc
	return in
}

func copyFile(t *testing.T, from, to string, perm os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// nobody is the credential of the user nobody; the test is skipped when
// it cannot switch users (not root) or the system has no such user.
func nobody(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running a command as nobody needs root")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
}

// runSendmailAs runs the installed binary as `relayq sendmail ARGS` in dir
// with the credential cred (nil: the test's own user) and no RELAYQ_
// variables, so everything comes from -C.
func runSendmailAs(t *testing.T, in install, cred *syscall.Credential, dir, stdin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(in.bin, append([]string{"sendmail"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "HOME=/nonexistent", "USER=nobody", "LOGNAME=nobody")
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	return runStdin(t, cmd, stdin)
}

// Every local user may send mail: PHP's mail() as www-data and a user's
// crontab run sendmail with the install's configuration, whose TLS and
// DKIM keys only root may read, and from any working directory, though the
// DKIM key's path is relative to the daemon's. The command reads the
// hostname and the submission address and opens no key file; the daemon
// (root) still signs what it receives.
func TestSendmailAsAnyUser(t *testing.T) {
	cred := nobody(t)
	mx := smtptest.NewServer(t)
	r := newRelay(t, mx.Addr(), "", "")
	in := newInstall(t, r)
	r.mustStart(t)
	for i, run := range []struct {
		who  string
		cred *syscall.Credential
	}{{"nobody", cred}, {"root from /", nil}} {
		tok := fmt.Sprintf("tok-anyuser-%d", i)
		code, errs := runSendmailAs(t, in, run.cred, "/", "To: a@x.test\nSubject: "+tok+"\n\nbody\n", "-C", in.cfg, "-t", "-i")
		if code != 0 {
			t.Fatalf("sendmail -C %s -t -i as %s: exit %d: %s", in.cfg, run.who, code, errs)
		}
		data := waitMessage(t, mx, 30*time.Second, func(m smtptest.Message) bool { return tokenOf(m.Data) == tok })
		if !bytes.Contains(data, []byte("DKIM-Signature:")) {
			t.Errorf("as %s: the relay did not sign:\n%s", run.who, data)
		}
	}
}
