package smtptest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/smtptest/internal/persona"
)

// dialFrom connects from the local address ip (Linux answers on all of
// 127.0.0.0/8, so 127.0.0.2 and up are a relay's source addresses) and
// says helo; the client closes with the test.
func dialFrom(t *testing.T, addr, ip, helo string) *smtp.Client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: waitTimeout}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, ip, err)
	}
	c := smtp.NewClient(conn)
	c.CommandTimeout, c.SubmissionTimeout = waitTimeout, waitTimeout
	t.Cleanup(func() { c.Close() })
	if err := c.Hello(helo); err != nil {
		t.Fatalf("EHLO %s: %v", helo, err)
	}
	return c
}

func TestLimitPerClientCountsOnlyThatAddress(t *testing.T) {
	clk := newFakeClock()
	l, err := ParseLimitPerClient("127.0.0.3=mail=2/min=421 4.7.0 [127.0.0.3] Too many messages")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(t, WithClock(clk.Now), WithRateLimits(l))
	limited := dialFrom(t, srv.Addr(), "127.0.0.3", "mta3.example.test")
	free := dialFrom(t, srv.Addr(), "127.0.0.2", "mta2.example.test")
	mail := func(c *smtp.Client) int {
		code := replyCode(c.Mail("a@src.test", nil))
		c.Reset()
		return code
	}
	var got []int
	for range 3 {
		got = append(got, mail(limited), mail(free))
	}
	if want := []int{250, 250, 250, 250, 421, 250}; !reflect.DeepEqual(got, want) {
		t.Fatalf("MAIL from .3 and .2 in turn: %v, want %v (only .3 limited, at 2/min)", got, want)
	}
	sc := srv.Script()
	if s := sc.String(); !strings.Contains(s, "--limit-per-client 127.0.0.3=mail=2/min=421 4.7.0 [127.0.0.3] Too many messages\n") {
		t.Fatalf("script written back as %q", s)
	}
	if _, err := ParseLimitPerClient("mta3=mail=2/min=421 4.7.0 x"); err == nil {
		t.Fatal("a host name was taken for the client address")
	}
}

func TestPersonaForOneClient(t *testing.T) {
	srv := NewServer(t, Persona("outlook,conns=1,client=127.0.0.4"))
	// outlook with conns=1 refuses a second connection from the same IP;
	// the option makes it answer only 127.0.0.4.
	dialFrom(t, srv.Addr(), "127.0.0.5", "a.test")
	dialFrom(t, srv.Addr(), "127.0.0.5", "a.test")
	dialFrom(t, srv.Addr(), "127.0.0.4", "b.test")
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.4")}, Timeout: waitTimeout}
	conn, err := d.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := smtp.NewClient(conn)
	if err := c.Hello("b.test"); replyCode(err) != 451 || !strings.Contains(err.Error(), "127.0.0.4") {
		t.Fatalf("second connection from 127.0.0.4: %v, want outlook's 451 naming the IP", err)
	}
	if _, err := newScriptState(Script{Personas: []string{"outlook,client=nowhere"}}, persona.Builtin()); err == nil || !strings.Contains(err.Error(), "client=") {
		t.Fatalf("client=nowhere: %v", err)
	}
}

func TestSourcesInTheAPI(t *testing.T) {
	srv := NewServer(t)
	for _, c := range []struct{ ip, helo string }{{"127.0.0.2", "mta2.example.test"}, {"127.0.0.3", "mta3.example.test"}, {"127.0.0.2", "mta2.example.test"}} {
		mustSend(t, dialFrom(t, srv.Addr(), c.ip, c.helo), c.ip)
	}
	want := []ClientSource{
		{IP: "127.0.0.2", Connections: 2, Messages: 2, Helos: []string{"mta2.example.test"}},
		{IP: "127.0.0.3", Connections: 1, Messages: 1, Helos: []string{"mta3.example.test"}},
	}
	if got := srv.Sources(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Sources() = %+v, want %+v", got, want)
	}
	hs := httptest.NewServer(srv.HTTPHandler())
	t.Cleanup(hs.Close)
	var body struct{ Sources []ClientSource }
	getJSON(t, hs.URL+"/api/v1/sources", http.StatusOK, &body)
	if !reflect.DeepEqual(body.Sources, want) {
		t.Fatalf("GET /api/v1/sources = %+v", body.Sources)
	}
	var list struct{ Messages []MessageSummary }
	getJSON(t, hs.URL+"/api/v1/messages?client=127.0.0.3&helo=MTA3.example.test", http.StatusOK, &list)
	if len(list.Messages) != 1 || list.Messages[0].Helo != "mta3.example.test" || !strings.HasPrefix(list.Messages[0].Client, "127.0.0.3:") {
		t.Fatalf("messages from 127.0.0.3: %+v", list.Messages)
	}
}
