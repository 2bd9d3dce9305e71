package e2e

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/relayq/relayq/smtptest"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "write the fakemx page test's screenshot to docs/fakemx.png")

// findChromium returns the headless browser to drive. Without one the test
// is skipped locally, but fails when CI is set: .ci/run installs Debian's
// chromium, so a missing browser there is a broken setup, not a reason to
// pass.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on PATH, but CI is set: .ci/run should have installed Debian's chromium")
	}
	t.Skip("no chromium on PATH: install Debian's chromium to run the fakemx page test (set CI to make this a failure)")
	return ""
}

// newBrowser starts headless Chromium for the test, closed at cleanup.
func newBrowser(t *testing.T, execPath string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(execPath),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.DisableGPU,
		chromedp.WindowSize(1200, 820),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	return ctx
}

const pageTestMessage = "From: Shop <app@example.org>\r\n" +
	"To: you@example.net\r\n" +
	"Subject: Your order #1234 has shipped\r\n" +
	"MIME-Version: 1.0\r\n" +
	"Content-Type: multipart/alternative; boundary=b1\r\n" +
	"\r\n" +
	"--b1\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n" +
	"\r\n" +
	"Your order #1234 has shipped. It arrives on Thursday.\r\n" +
	"--b1\r\n" +
	"Content-Type: text/html; charset=utf-8\r\n" +
	"\r\n" +
	"<h2 style=\"color:#1f6feb\">Your order has shipped</h2><p>It arrives on <b>Thursday</b>.</p>" +
	"<img src=\"https://tracker.example/open.png\" alt=\"\"><script>document.title='pwned'</script>\r\n" +
	"--b1--\r\n"

// TestFakemxPageInABrowser sends a message through the built relay to a
// greylisting fakemx and follows it on fakemx's page in real Chromium: it
// appears without a reload, the timeline shows the 451s and the 250, and
// the script editor replaces the server's script.
func TestFakemxPageInABrowser(t *testing.T) {
	chrome := findChromium(t)
	mx := smtptest.NewServer(t, smtptest.Greylist(time.Second))
	site := httptest.NewServer(mx.HTTPHandler())
	t.Cleanup(site.Close)
	r := startRelay(t, mx.Addr())
	ctx := newBrowser(t, chrome)

	must(t, "open the page", chromedp.Do(ctx,
		chromedp.EmulateViewport(1200, 760),
		chromedp.Navigate(site.URL),
		chromedp.WaitVisible("#empty"),
		chromedp.Evaluate[chromedp.Void](`window.sameLoad = true`),
	))
	waitJS(t, ctx, "the live stream connects", `document.querySelector('#live').textContent === 'live'`)

	c := mustDial(t, r.addr)
	if out, line, err := c.send("app@example.org", "you@example.net", pageTestMessage, nil); err != nil || out != accepted {
		t.Fatalf("submit: %v %q %v", out, line, err)
	}

	waitJS(t, ctx, "the message appears in the list",
		`[...document.querySelectorAll('#messages .subj')].some(e => e.textContent === 'Your order #1234 has shipped')`)
	if same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameLoad === true`)); err != nil || !same {
		t.Fatalf("the page reloaded to show the message (%v)", err)
	}

	must(t, "open the message", chromedp.Do(ctx, chromedp.Click("#messages li.msg"), chromedp.WaitVisible("#timeline .summary")))
	waitJS(t, ctx, "the timeline ends in 250", `/ 250$/.test(document.querySelector('#timeline .summary').textContent)`)
	summary, err := chromedp.Run(ctx, chromedp.Text("#timeline .summary"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^451 greylist (→ \d+\.\d s later 451 greylist )*→ \d+\.\d s later 250 → \d+\.\d s later 250$`).MatchString(summary) {
		t.Fatalf("timeline summary %q, want 451 greylist → ... later 250 (RCPT) → ... later 250 (DATA)", summary)
	}
	text, err := chromedp.Run(ctx, chromedp.Text("#text"))
	if err != nil || !strings.Contains(text, "It arrives on Thursday.") {
		t.Fatalf("text part shown as %q (%v)", text, err)
	}
	if title, _ := chromedp.Run(ctx, chromedp.Title()); title != "fakemx" {
		t.Fatalf("page title %q: the message's script ran", title)
	}

	must(t, "edit the script", chromedp.Do(ctx,
		chromedp.SendKeys("#script", "--reply rcpt:nobody@=550 5.1.1 No such user\n"),
		chromedp.Click("#save-script"),
	))
	waitJS(t, ctx, "the script is saved", `document.querySelector('#script-status').className === 'ok'`)
	if got := mx.Script().String(); got != "--greylist 1s\n--reply rcpt:nobody@=550 5.1.1 No such user\n" {
		t.Fatalf("script in force after the edit:\n%s", got)
	}
	saveScreenshot(t, ctx)

	must(t, "save a bad script", chromedp.Do(ctx,
		chromedp.SendKeys("#script", "--reply rcpt=hello\n"),
		chromedp.Click("#save-script"),
	))
	waitJS(t, ctx, "the error is shown", `document.querySelector('#script-status').className === 'error'`)
	status, err := chromedp.Run(ctx, chromedp.Text("#script-status"))
	if err != nil || status != `line 3: --reply "rcpt=hello": bad reply code "hello"` {
		t.Fatalf("error shown as %q (%v)", status, err)
	}
}

// waitJS polls expr in the page until it is true, failing after a while.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// saveScreenshot checks that the page renders to a real image, and with
// -update-screenshot writes it to docs/fakemx.png for the README.
func saveScreenshot(t *testing.T, ctx context.Context) {
	t.Helper()
	must(t, "scroll to the top", chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)))
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil || img.Bounds().Dx() < 800 {
		t.Fatalf("screenshot is not a page-sized PNG: %v", err)
	}
	if !*updateScreenshot {
		return
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "docs", "fakemx.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", path, len(shot))
}
