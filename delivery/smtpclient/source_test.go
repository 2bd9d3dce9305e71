package smtpclient

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/egress"
	"github.com/relayq/relayq/smtpcodes"
	"github.com/relayq/relayq/smtptest"
)

// A hop with a source connects from the source's address and says its
// EHLO name; connections are cached per source and hop, so each source's
// second message reuses its own connection and never another source's.
func TestSourceBindsAddressAndEHLO(t *testing.T) {
	srv := smtptest.NewServer(t)
	d := testDialer()
	defer d.Close()
	a := &egress.Source{Name: "ip2", Addr: netip.MustParseAddr("127.0.0.2"), EHLO: "mta2.example.test"}
	b := &egress.Source{Name: "ip3", Addr: netip.MustParseAddr("127.0.0.3"), EHLO: "mta3.example.test"}
	for _, src := range []*egress.Source{a, b, a, b, nil} {
		hop := hopTo(t, srv.Addr())
		hop.Source = src
		wantAll(t, deliver(t, d, []Hop{hop}, envelope("bob@example.test"), bodyOf(testBody)), smtpcodes.Success, 250, "2.0.0")
	}
	srv.WaitMessages(t, 5, 5*time.Second)
	got := srv.Sources()
	want := []smtptest.ClientSource{
		{IP: "127.0.0.1", Connections: 1, Messages: 1, Helos: []string{d.hostname()}},
		{IP: "127.0.0.2", Connections: 1, Messages: 2, Helos: []string{"mta2.example.test"}},
		{IP: "127.0.0.3", Connections: 1, Messages: 2, Helos: []string{"mta3.example.test"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the server saw %+v, want %+v", got, want)
	}
}

// An address the host cannot bind fails the hop at connect, naming the
// source, as a transient failure: the mail waits, it is not bounced.
func TestSourceThatCannotBind(t *testing.T) {
	srv := smtptest.NewServer(t)
	d := testDialer()
	defer d.Close()
	hop := hopTo(t, srv.Addr())
	hop.Source = &egress.Source{Name: "gone", Addr: netip.MustParseAddr("192.0.2.55"), EHLO: "gone.example.test"}
	res := deliver(t, d, []Hop{hop}, envelope("bob@example.test"), bodyOf(testBody))
	if res[0].Reply.Class != smtpcodes.Transient || !strings.Contains(res[0].Reply.String(), "from gone (192.0.2.55)") {
		t.Fatalf("reply %v, want a transient failure naming the source", res[0].Reply)
	}
}
