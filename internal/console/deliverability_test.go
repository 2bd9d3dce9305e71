package console

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/deliverability"
	"github.com/relayq/relayq/queue"
)

// The overview shows each provider's figures for 1 h and 24 h, the
// complaint rate marked bad at or past the 0.3 % line and good below it.
func TestOverviewShowsAcceptance(t *testing.T) {
	st, err := queue.Open(filepath.Join(t.TempDir(), "queue.db"), queue.Options{LockTimeout: time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rows := []deliverability.Row{
		{Key: deliverability.Key{Provider: "gmail", Stream: "bulk", SenderDomain: "shop.example"},
			Hour: deliverability.Counts{Delivered: 1000, Complained: 5}, Day: deliverability.Counts{Delivered: 2000, Complained: 4 + 5, Bounced: 3}},
		{Key: deliverability.Key{Provider: "yahoo", Stream: "bulk", SenderDomain: "shop.example"},
			Hour: deliverability.Counts{Delivered: 1000, Complained: 1}, Day: deliverability.Counts{Delivered: 1000, Complained: 1, Unsubscribed: 7}},
	}
	h := admin.NewHandler(admin.Options{Store: st, Logger: quiet, Console: New(Options{Loopback: true, Logger: quiet}),
		Deliverability: func() []deliverability.Row { return rows }})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s := &site{t: t, store: st, srv: srv}
	code, body := s.browser().get("/")
	if code != http.StatusOK {
		t.Fatalf("overview: %d\n%s", code, body)
	}
	for _, want := range []string{
		`<tr id="dv-gmail-bulk-1h"><td>gmail</td><td>bulk</td><td>1 h</td><td class="n delivered">1000</td><td class="n">0</td><td class="n">0</td><td class="n">5</td><td class="n">0</td><td class="bad rate">0.50 %</td></tr>`,
		`<tr id="dv-gmail-bulk-24h"><td>gmail</td><td>bulk</td><td>24 h</td><td class="n delivered">2000</td><td class="n">0</td><td class="n">3</td><td class="n">9</td><td class="n">0</td><td class="bad rate">0.45 %</td></tr>`,
		`<tr id="dv-yahoo-bulk-24h"><td>yahoo</td><td>bulk</td><td>24 h</td><td class="n delivered">1000</td><td class="n">0</td><td class="n">0</td><td class="n">1</td><td class="n">7</td><td class="good rate">0.10 %</td></tr>`,
		`complaint rate (line 0.30 %)`,
	} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(body) {
			t.Errorf("overview lacks %s\n%s", want, body)
		}
	}
}
