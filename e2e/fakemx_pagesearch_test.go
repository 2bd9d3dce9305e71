package e2e

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/smtptest"
)

// searchMessages are what the page test looks through: the word "parcel"
// is only in the second one's body, base64-encoded, beside an image.
var searchMessages = []string{
	"Subject: Welcome\r\n\r\nHello and welcome.\r\n",
	"Subject: Shipping update\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n" +
		"--x\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
		"WW91ciBwYXJjZWwgaXMgb24gaXRzIHdheS4=\r\n" + // "Your parcel is on its way."
		"--x\r\nContent-Type: image/png\r\nContent-Disposition: attachment; filename=\"map.png\"\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
		"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==\r\n--x--\r\n",
}

// TestFakemxPageSearchOpenDelete finds a message on fakemx's page by text
// in its body, opens it by its own URL in a fresh page (its image shown
// inline), deletes it there, and sees it gone from the list and the API.
func TestFakemxPageSearchOpenDelete(t *testing.T) {
	chrome := findChromium(t)
	mx := smtptest.NewServer(t)
	site := httptest.NewServer(mx.HTTPHandler())
	t.Cleanup(site.Close)
	for _, body := range searchMessages {
		c, err := smtp.Dial(mx.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SendMail("app@example.org", []string{"you@example.net"}, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	ctx := newBrowser(t, chrome)

	must(t, "open the page", chromedp.Do(ctx, chromedp.Navigate(site.URL), chromedp.WaitVisible("#search")))
	waitJS(t, ctx, "both messages are listed", `document.querySelectorAll('#messages li.msg').length === 2`)
	must(t, "search", chromedp.Do(ctx, chromedp.SendKeys("#search", "parcel")))
	waitJS(t, ctx, "only the shipping update is left",
		`[...document.querySelectorAll('#messages .subj')].map(e => e.textContent).join() === 'Shipping update'`)
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#messages li.msg a').href`))
	if err != nil || !strings.HasSuffix(href, "/#/message/2") {
		t.Fatalf("the message's link is %q (%v), want its own URL #/message/2", href, err)
	}

	// A fresh page at that URL: the message opens by itself.
	must(t, "open the message's URL", chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(href), chromedp.WaitVisible("#view")))
	waitJS(t, ctx, "the message is open", `document.querySelector('#subject').textContent === 'Shipping update'`)
	waitJS(t, ctx, "its image is shown inline", `(() => { const i = document.querySelector('img.inline'); return i && i.complete && i.naturalWidth === 1; })()`)

	must(t, "delete it", chromedp.Do(ctx, chromedp.Click("#delete")))
	waitJS(t, ctx, "it is gone from the list",
		`document.querySelector('#view').hidden && [...document.querySelectorAll('#messages .subj')].map(e => e.textContent).join() === 'Welcome'`)
	if n := mx.MessageCount(); n != 1 || mx.Messages()[0].ID != "1" {
		t.Fatalf("after deleting on the page the server has %d messages: %+v", n, mx.Messages())
	}
}
