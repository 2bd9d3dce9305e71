package e2e

import (
	"reflect"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// The built relay sends from its configured source addresses (on
// loopback, 127.0.0.2 and up), each saying its own EHLO name, in the
// shares of the pool's weights: the outsider is a real SMTP server that
// sees the client address of every connection.
func TestEgressSourcesFromTheBinary(t *testing.T) {
	mx := smtptest.NewServer(t)
	r := newRelay(t, mx.Addr(), "", "")
	rewriteConfig(t, r, map[string]string{"delivery:\n": `delivery:
  egress:
    sources:
      - {name: ip2, address: 127.0.0.2, ehlo: mta2.example.test}
      - {name: ip3, address: 127.0.0.3, ehlo: mta3.example.test}
    pools:
      - {name: bulk, sources: [{source: ip2, weight: 3}, {source: ip3, weight: 1}]}
    default_pool: bulk
`})
	r.mustStart(t)
	const n = 40
	submitEach(t, r.addr, n)
	mx.WaitMessages(t, n, 30*time.Second)
	got := mx.Sources()
	if len(got) != 2 || got[0].IP != "127.0.0.2" || got[1].IP != "127.0.0.3" {
		t.Fatalf("the MX saw mail from %+v, want 127.0.0.2 and 127.0.0.3 only", got)
	}
	// 3:1 of 40 is 30 and 10; the pool's random start may shift one.
	if m := got[0].Messages; m < 29 || m > 31 || got[0].Messages+got[1].Messages != n {
		t.Errorf("shares %d and %d, want 30 and 10 (±1)", got[0].Messages, got[1].Messages)
	}
	for i, ehlo := range []string{"mta2.example.test", "mta3.example.test"} {
		if !reflect.DeepEqual(got[i].Helos, []string{ehlo}) {
			t.Errorf("%s said EHLO %v, want %s", got[i].IP, got[i].Helos, ehlo)
		}
	}
}
