package e2e

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/waitfor"
)

// tlsHop is a next hop whose STARTTLS is broken, in one of the two ways
// seen in the field: it refuses it ("454 TLS currently unavailable", Exim
// with an unreadable key), or says 220 and fails the handshake with an
// alert (OpenSMTPD without a usable key: "tls: internal error"). In plain
// text it takes mail. It records, per connection, whether STARTTLS was
// asked, and the tokens of the bodies it took.
type tlsHop struct {
	l      net.Listener
	refuse bool

	mu       sync.Mutex
	starttls []bool
	took     []string
}

func newTLSHop(t *testing.T, refuse bool) *tlsHop {
	t.Helper()
	h := &tlsHop{refuse: refuse}
	h.l = acceptEach(t, func(c net.Conn) {
		h.mu.Lock()
		h.starttls = append(h.starttls, false)
		n := len(h.starttls) - 1
		h.mu.Unlock()
		go h.serve(c, n)
	})
	return h
}

func (h *tlsHop) serve(c net.Conn, n int) {
	defer c.Close()
	r := bufio.NewReader(c)
	say := func(l string) { _, _ = c.Write([]byte(l + "\r\n")) }
	say("220 broken-tls.test ESMTP")
	eachCommand(c, r, func(cmd string) bool {
		switch {
		case strings.HasPrefix(cmd, "EHLO"):
			say("250-broken-tls.test\r\n250-PIPELINING\r\n250 STARTTLS")
		case cmd == "STARTTLS":
			h.mu.Lock()
			h.starttls[n] = true
			h.mu.Unlock()
			if h.refuse {
				say("454 TLS currently unavailable")
				return true
			}
			say("220 2.0.0 Ready to start TLS")
			cfg := &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
				return nil, errors.New("no usable key")
			}}
			_ = tls.Server(c, cfg).Handshake() // answers with an internal_error alert
			return false
		case cmd == "DATA":
			say("354 go ahead")
			body, ok := readBody(r)
			if !ok {
				return false
			}
			h.mu.Lock()
			h.took = append(h.took, tokenOf(body))
			h.mu.Unlock()
			say("250 2.0.0 taken")
		case cmd == "QUIT":
			say("221 bye")
			return false
		default:
			say("250 ok")
		}
		return true
	})
}

func (h *tlsHop) record() (asked []bool, took []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]bool(nil), h.starttls...), append([]string(nil), h.took...)
}

// setDeliveryTLS sets delivery.tls in r's configuration.
func (r *relay) setDeliveryTLS(t *testing.T, mode string) {
	t.Helper()
	rewriteConfig(t, r, map[string]string{"delivery:\n  tls: none\n": "delivery:\n  tls: " + mode + "\n"})
}

// Opportunistic TLS falls back to plain text when STARTTLS fails (RFC
// 3207 section 4, RFC 7435): after a 454 in the same session, after a
// failed handshake on the next attempt. The delivered event says
// "fallback", the log and a metric count it, and TLS-RPT records the
// failure. delivery.tls: required never falls back.
func TestOpportunisticTLSFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name        string
		refuse      bool
		mode        string
		wantAttempt int // of the delivery; 0: never delivered
		failure     string
	}{
		{"454/opportunistic", true, "opportunistic", 1, "starttls-not-supported"},
		{"handshake/opportunistic", false, "opportunistic", 2, "validation-failure"},
		{"454/required", true, "required", 0, ""},
		{"handshake/required", false, "required", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hop := newTLSHop(t, tc.refuse)
			r := startRelay(t, hop.l.Addr().String(), withDeliveryTLS(tc.mode), withAdminAPI())
			adminURL := r.adminURL
			tok := "tok-tlsfb-" + strings.ReplaceAll(tc.name, "/", "-")
			id := submitTokens(t, r, []string{tok})[tok]
			var delivered *streamEvent
			deferrals := 0
			readEvents(t, strings.TrimPrefix(adminURL, "http://"), func(evs []streamEvent) bool {
				deferrals = 0
				for i, e := range evs {
					switch {
					case e.QueueID != id:
					case e.Type == "delivered":
						delivered = &evs[i]
						return true
					case e.Type == "deferred":
						deferrals++
					}
				}
				return deferrals >= 3
			})
			asked, took := hop.record()
			if tc.wantAttempt == 0 {
				if delivered != nil || len(took) > 0 {
					t.Fatalf("delivered in plain text with delivery.tls: required (event %+v, bodies %v)", delivered, took)
				}
				return
			}
			if delivered == nil {
				t.Fatalf("deferred %d times, never delivered; STARTTLS asked per connection: %v", deferrals, asked)
			}
			if delivered.Attempt != tc.wantAttempt || delivered.TLS != "fallback" {
				t.Errorf("delivered on attempt %d with tls %q, want attempt %d, tls \"fallback\"", delivered.Attempt, delivered.TLS, tc.wantAttempt)
			}
			if len(took) != 1 || took[0] != tok {
				t.Errorf("the next hop took %v, want [%s]", took, tok)
			}
			for _, want := range []string{"tls_failure=" + tc.failure, "tls_version=fallback"} {
				if err := r.log.waitFor(want, 10*time.Second); err != nil {
					t.Error(err)
				}
			}
			// Counted after the outcome is written, and so after its event.
			if err := waitMetric(adminURL, `relayq_delivery_tls_fallback_total{result="delivered"}`, "1", 10*time.Second); err != nil {
				t.Error(err)
			}
			rep := getBody(t, adminURL+"/api/v1/tls-report?domain=example.net&day="+time.Now().UTC().Format(time.DateOnly))
			if !strings.Contains(rep, `"no-policy-found"`) || !strings.Contains(rep, `"`+tc.failure+`"`) {
				t.Errorf("TLS-RPT report does not record the %s failure:\n%s", tc.failure, rep)
			}
		})
	}
}

// waitMetric waits until the relay's /metrics has the sample name = want,
// scraping it on waitfor's ticks: a counter has no way to say it changed.
func waitMetric(adminURL, name, want string, within time.Duration) error {
	var got string
	var err error
	waitfor.Within(within, func() bool {
		got, err = scrapeMetric(adminURL, name)
		return err != nil || got == want
	})
	switch {
	case err != nil:
		return err
	case got != want:
		return fmt.Errorf("metric %s is %q after %v, want %s", name, got, within, want)
	}
	return nil
}

// scrapeMetric returns the value of the sample name in adminURL's /metrics.
func scrapeMetric(adminURL, name string) (string, error) {
	resp, err := http.Get(adminURL + "/metrics")
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return "", err
	}
	got := ""
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			got = v
		}
	}
	return got, nil
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, b)
	}
	return string(b)
}
