package e2e

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

var updateConsoleShots = flag.Bool("update-console-screenshots", false, "write the console test's screenshots to docs/console-*.png")

const (
	consoleWrite = "console-write-secret"
	consoleRead  = "console-read-secret"
	// scriptSubject must show as text; run, it would set window.pwned.
	scriptSubject = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`
)

// consoleRelay is the built relay with both admin tokens and four next
// hops: grey.test greylists (451, then 250), limited.test answers 421
// 4.7.28 (a shaping rule suspends it), slow.test and park.test are down.
type consoleRelay struct {
	r     *relay
	base  string // http://127.0.0.1:P
	api   *admin.Client
	grey  string // queue IDs
	slow  []string
	park  string
	limit string
}

func startConsoleRelay(t *testing.T) *consoleRelay {
	t.Helper()
	grey := smtptest.NewServer(t, smtptest.Greylist(time.Second))
	limited := smtptest.NewServer(t, smtptest.Reply("mail=421 4.7.28 Our system has detected an unusual rate of mail"))
	down := smtptest.DownAddr(t)
	r := newRelay(t, down, "", "")
	adminAddr := smtptest.ClosedAddr(t)
	cfg := r.configHead("relay.test") + fmt.Sprintf(`admin:
  listen: %q
  token: %q
  read_token: %q
delivery:
  tls: none
  connect_timeout: 2s
  command_timeout: 10s
  routes:
    grey.test: %q
    limited.test: %q
    "*": %q
retry:
  initial_delay: 200ms
  max_delay: 1s
  jitter: 50ms
%s
log:
  level: info
`, adminAddr, consoleWrite, consoleRead, grey.Addr(), limited.Addr(), down, suspendOn4728)
	r.startWith(t, []byte(cfg))
	waitDial(t, adminAddr)
	cr := &consoleRelay{r: r, base: "http://" + adminAddr, api: &admin.Client{BaseURL: adminAddr, Token: consoleWrite}}
	c, err := dialClient(r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	cr.grey = submitForID(t, c, "a@grey.test", "tok-grey")
	cr.limit = submitForID(t, c, "a@limited.test", "tok-limited")
	for i := range 3 {
		cr.slow = append(cr.slow, submitForID(t, c, fmt.Sprintf("u%d@slow.test", i), fmt.Sprintf("tok-slow-%d", i)))
	}
	msg := strings.Replace(testMessage("tok-park"), "Subject: tok-park", "Subject: "+scriptSubject, 1)
	o, line, err := c.send("app@example.org", "a@park.test", msg, nil)
	m := queuedAs.FindStringSubmatch(line)
	if err != nil || o != accepted || m == nil {
		t.Fatalf("submit the script subject: %v %s %v", o, line, err)
	}
	cr.park = m[1]
	if err := r.log.waitFor(`msg="shaping: scope suspended" scope=domain:limited.test`, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	cr.waitGone(t, cr.grey)
	return cr
}

// waitGone waits until id has left the queue (delivered).
func (cr *consoleRelay) waitGone(t *testing.T, id string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := cr.api.Show(ctx, id)
		cancel()
		var ae *admin.APIError
		if errors.As(err, &ae) && ae.Status == 404 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %s still queued after 20s (%v)", id, err)
		}
		tick := time.NewTimer(100 * time.Millisecond) // bounded poll of the API
		<-tick.C
	}
}

// login opens the console and logs in with token.
func login(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	must(t, "open the login form", chromedp.Do(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible("#token")))
	must(t, "log in", chromedp.Do(ctx, chromedp.SendKeys("#token", token), chromedp.Click("#login")))
	if err := chromedp.Do(wait(ctx, 20*time.Second), chromedp.WaitVisible("#counts")); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
		t.Fatalf("after logging in at %s: %v\n%s", loc, err, html)
	}
}

// TestConsoleInABrowser drives the console of the built relay in real
// Chromium with real mail through real next hops: the overview's counts
// are the API's, a suspended domain shows its rule and reply, a
// message's timeline shows its attempts in order with their replies, a
// subject with markup is text and runs nothing, a bulk hold by filter
// shows its dry-run count and holds exactly those, a POST without the
// CSRF token and the read token's forged action get 403.
func TestConsoleInABrowser(t *testing.T) {
	chrome := findChromium(t)
	cr := startConsoleRelay(t)
	ctx := newBrowser(t, chrome)
	login(t, ctx, cr.base, consoleWrite)
	checkOverview(t, ctx, cr)
	consoleShot(t, ctx, "overview")

	must(t, "open destinations", chromedp.Do(ctx, chromedp.Navigate(cr.base+"/ui/destinations"), chromedp.WaitVisible("#suspensions")))
	sus := text(t, ctx, "#suspensions")
	for _, want := range []string{"domain:limited.test", "rules[0]", "421 4.7.28 Our system has detected an unusual rate of mail"} {
		if !strings.Contains(sus, want) {
			t.Errorf("destinations' suspensions lack %q:\n%s", want, sus)
		}
	}
	consoleShot(t, ctx, "destinations")

	checkTimeline(t, ctx, cr)
	consoleShot(t, ctx, "timeline")
	checkScriptSubject(t, ctx, cr)
	checkBulkHold(t, ctx, cr)
	checkEventsLive(t, ctx, cr)
	checkRefusals(t, ctx, cr)
}

// checkOverview compares the overview's numbers with the API's.
func checkOverview(t *testing.T, ctx context.Context, cr *consoleRelay) {
	t.Helper()
	must(t, "reload the overview", chromedp.Do(ctx, chromedp.Navigate(cr.base+"/"), chromedp.WaitVisible("#counts")))
	apiCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := cr.api.Stats(apiCtx)
	if err != nil {
		t.Fatal(err)
	}
	for sel, want := range map[string]int{
		"#n-messages": st.Messages, "#n-held": st.Held, "#n-quarantined": st.Quarantined,
		"#n-scheduled": st.Recipients[queue.StatusScheduled],
	} {
		if got := number(t, ctx, sel); got != want {
			t.Errorf("overview %s = %d, the API says %d", sel, got, want)
		}
	}
	// A retry may move a recipient between queued and deferred between
	// the two reads; their sum is fixed.
	if got, want := number(t, ctx, "#n-queued")+number(t, ctx, "#n-deferred"), st.Recipients[queue.StatusQueued]+st.Recipients[queue.StatusDeferred]; got != want {
		t.Errorf("overview: %d recipients queued or deferred, the API says %d", got, want)
	}
	if number(t, ctx, "#total-accepted") != 6 {
		t.Errorf("the chart counts %s accepted in the hour, want 6", text(t, ctx, "#total-accepted"))
	}
	// Each provider's acceptance: grey.test's delivery counts under other.
	a, err := cr.api.Deliverability(apiCtx)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range a.Providers {
		if row.Provider == "other" && row.Stream == "default" {
			if got := number(t, ctx, "#dv-other-default-24h .delivered"); got != row.Day.Delivered || got < 1 {
				t.Errorf("overview: %d delivered at other in 24 h, the API says %d", got, row.Day.Delivered)
			}
		}
	}
	if st.Messages != 5 { // grey delivered; limited, 3 slow, park waiting
		t.Errorf("the API counts %d messages, want 5", st.Messages)
	}
}

// checkTimeline opens the greylisted message: queued, 451 deferrals,
// then delivered with 250, in that order.
func checkTimeline(t *testing.T, ctx context.Context, cr *consoleRelay) {
	t.Helper()
	must(t, "open the timeline", chromedp.Do(ctx, chromedp.Navigate(cr.base+"/ui/message/"+cr.grey), chromedp.WaitVisible("#timeline")))
	evs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#timeline li')].map(li => li.querySelector('.type').textContent + ' ' + (li.querySelector('.reply') || {textContent: ''}).textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("timeline: %q", evs)
	if len(evs) < 3 || !strings.HasPrefix(evs[0], "queued") || !strings.HasPrefix(evs[len(evs)-1], "delivered 250") {
		t.Fatalf("timeline %q: want queued, deferred 451..., delivered 250", evs)
	}
	for _, e := range evs[1 : len(evs)-1] {
		if !strings.HasPrefix(e, "deferred 451") {
			t.Fatalf("timeline %q: %q between queued and delivered", evs, e)
		}
	}
}

// checkScriptSubject shows the subject with markup on the list and the
// message page as text, and nothing ran.
func checkScriptSubject(t *testing.T, ctx context.Context, cr *consoleRelay) {
	t.Helper()
	for _, path := range []string{"/ui/messages?domain=park.test", "/ui/message/" + cr.park} {
		must(t, "open "+path, chromedp.Do(ctx, chromedp.Navigate(cr.base+path), chromedp.WaitVisible(".subject")))
		shown := text(t, ctx, ".subject")
		if shown != scriptSubject {
			t.Errorf("%s shows the subject as %q, want the text %q", path, shown, scriptSubject)
		}
		ran, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.pwned !== undefined || document.querySelector('main script, main img') !== null`))
		if err != nil || ran {
			t.Fatalf("%s: the subject's markup became elements or ran (%v)", path, err)
		}
	}
}

// checkBulkHold holds slow.test's mail by filter: the question shows 3,
// the answer holds exactly those.
func checkBulkHold(t *testing.T, ctx context.Context, cr *consoleRelay) {
	t.Helper()
	must(t, "ask for the bulk hold", chromedp.Do(ctx,
		chromedp.Navigate(cr.base+"/ui/messages?domain=slow.test"),
		chromedp.WaitVisible("#bulk"),
		chromedp.SetValue("#bulk-action", "hold"),
		chromedp.Click("#bulk"),
		chromedp.WaitVisible("#count"),
	))
	if n := number(t, ctx, "#count"); n != 3 {
		t.Fatalf("dry run counts %d, want 3 (%s)", n, text(t, ctx, "#question"))
	}
	if held := cr.heldIDs(t); len(held) != 0 {
		t.Fatalf("held before the answer: %v", held)
	}
	must(t, "confirm", chromedp.Do(ctx, chromedp.Click("#confirm"), chromedp.WaitVisible("#done")))
	held := cr.heldIDs(t)
	if strings.Join(held, " ") != strings.Join(cr.slow, " ") {
		t.Fatalf("held %v, want exactly slow.test's %v", held, cr.slow)
	}
}

// checkEventsLive opens the event page filtered to "released" and
// releases a message by the API: its row appears without a reload.
func checkEventsLive(t *testing.T, ctx context.Context, cr *consoleRelay) {
	t.Helper()
	must(t, "open the events", chromedp.Do(ctx,
		chromedp.Navigate(cr.base+"/ui/events?type=released"),
		chromedp.WaitVisible("#events"),
		chromedp.Evaluate[chromedp.Void](`window.sameLoad = true`),
	))
	waitJS(t, ctx, "the stream connects", `document.querySelector('#live').textContent === 'live'`)
	apiCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cr.api.Release(apiCtx, cr.slow[0]); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the release appears", fmt.Sprintf(
		`[...document.querySelectorAll('#events tbody tr')].some(r => r.cells[1].textContent === 'released' && r.cells[2].textContent === %q)`, cr.slow[0]))
	if same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameLoad === true`)); err != nil || !same {
		t.Fatalf("the page reloaded to show the event (%v)", err)
	}
}

// heldIDs lists the held messages by the API, in queue order.
func (cr *consoleRelay) heldIDs(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := cr.api.List(ctx, admin.ListQuery{Status: "held", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range p.Messages {
		ids = append(ids, m.ID)
	}
	return ids
}

// postFrom sends a form POST from the page (same origin, the session's
// cookie) and returns the status.
func postFrom(t *testing.T, ctx context.Context, path, form string) int {
	t.Helper()
	code, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(
		`fetch(%q, {method: "POST", body: new URLSearchParams(%s), redirect: "manual"}).then(r => r.status)`, path, form),
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("POST %s from the page: %v", path, err)
	}
	return code
}

// checkRefusals: a POST without the CSRF token gets 403; the read token
// sees no action and its forged action, with its own CSRF token, gets 403.
func checkRefusals(t *testing.T, ctx context.Context, cr *consoleRelay) {
	t.Helper()
	must(t, "open park.test's message", chromedp.Do(ctx, chromedp.Navigate(cr.base+"/ui/message/"+cr.park), chromedp.WaitVisible("#actions")))
	if code := postFrom(t, ctx, "/ui/message/"+cr.park+"/act", `{action: "delete", confirm: "yes"}`); code != 403 {
		t.Errorf("delete without the CSRF token: %d, want 403", code)
	}
	must(t, "log out", chromedp.Do(ctx, chromedp.Click("header form button"), chromedp.WaitVisible("#token")))
	login(t, ctx, cr.base, consoleRead)
	must(t, "open as read", chromedp.Do(ctx, chromedp.Navigate(cr.base+"/ui/message/"+cr.park), chromedp.WaitVisible("#recipients")))
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#actions, form[action$="/act"], #bulk').length`)); err != nil || n != 0 {
		t.Errorf("the read token's page has %d action controls (%v)", n, err)
	}
	must(t, "the read token's timeline", chromedp.Do(ctx, chromedp.WaitVisible("#timeline")))
	// Events, history and suppressions are the read token's too (issue
	// 31: everything but bodies and raw headers), with no form that acts.
	for _, page := range []string{"/ui/messages?to=a@park.test", "/ui/events", "/ui/suppressions"} {
		must(t, "open "+page+" as read", chromedp.Do(ctx, chromedp.Navigate(cr.base+page), chromedp.WaitVisible(chromedp.CSS("main"))))
		if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('main form[method=post]').length`)); err != nil || n != 0 {
			t.Errorf("the read token's %s has %d forms that post (%v)", page, n, err)
		}
		if msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#error') ? document.querySelector('#error').textContent : ""`)); err != nil || msg != "" {
			t.Errorf("the read token's %s: %q (%v)", page, msg, err)
		}
	}
	must(t, "back to the message as read", chromedp.Do(ctx, chromedp.Navigate(cr.base+"/ui/message/"+cr.park), chromedp.WaitVisible("#recipients")))
	form := `{action: "delete", confirm: "yes", csrf: document.querySelector('input[name=csrf]').value}`
	if code := postFrom(t, ctx, "/ui/message/"+cr.park+"/act", form); code != 403 {
		t.Errorf("the read token's forged delete: %d, want 403", code)
	}
	apiCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cr.api.Show(apiCtx, cr.park); err != nil {
		t.Fatalf("park.test's message after the refused deletes: %v", err)
	}
}

// wait bounds one step of the browser.
func wait(ctx context.Context, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(ctx, d)
	_ = cancel // ends with ctx's parent, at the test's cleanup
	return ctx
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.TextContent(sel))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func number(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := strconv.Atoi(text(t, ctx, sel))
	if err != nil {
		t.Fatalf("%s is not a number: %v", sel, err)
	}
	return n
}

// consoleShot checks the page renders to an image and, with
// -update-console-screenshots, writes it to docs/console-NAME.png.
func consoleShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatal(err)
	}
	if img, err := png.Decode(bytes.NewReader(shot)); err != nil || img.Bounds().Dx() < 800 {
		t.Fatalf("screenshot of %s is not a page-sized PNG: %v", name, err)
	}
	if !*updateConsoleShots {
		return
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "docs", "console-"+name+".png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", path, len(shot))
}
