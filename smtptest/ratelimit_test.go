package smtptest

import (
	"net"
	"slices"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

func TestParseRateLimit(t *testing.T) {
	tests := []struct {
		in   string
		want RateRule
	}{
		{"rcpt:*@gmail.test=10/min=421 4.7.28 Our system has detected an unusual rate of mail",
			RateRule{Stage: StageRcpt, Match: "*@gmail.test", Count: 10, Every: time.Minute, Code: 421, Enhanced: smtp.EnhancedCode{4, 7, 28}, Text: "Our system has detected an unusual rate of mail"}},
		{"mail=5/h,per=sender=451", RateRule{Stage: StageMail, Per: PerSender, Count: 5, Every: time.Hour, Code: 451}},
		{"greeting=2/30s=421 4.7.0 Busy", RateRule{Stage: StageGreeting, Count: 2, Every: 30 * time.Second, Code: 421, Enhanced: smtp.EnhancedCode{4, 7, 0}, Text: "Busy"}},
		{"data=1/s,per=ip=554 5.7.1 No", RateRule{Stage: StageData, Per: PerIP, Count: 1, Every: time.Second, Code: 554, Enhanced: smtp.EnhancedCode{5, 7, 1}, Text: "No"}},
	}
	for _, tc := range tests {
		got, err := ParseRateLimit(tc.in)
		if err != nil {
			t.Errorf("ParseRateLimit(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseRateLimit(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		again, err := ParseRateLimit(got.String())
		if err != nil || again != got {
			t.Errorf("round trip of %q via %q: %+v, %v", tc.in, got.String(), again, err)
		}
	}
	for _, bad := range []string{
		"", "rcpt", "rcpt=10/min", "rcpt=10=421", "rcpt=x/min=421", "rcpt=0/min=421", "rcpt=10/fortnight=421",
		"rcpt=10/min=250 OK", "rcpt=10/min=drop", "rcpt=10/min=delay 1s 421", "quit=1/s=421",
		"greeting=1/s,per=sender=421", "rcpt=1/s,per=moon=421", "rcpt=1/48h=421", "rcpt=1000000/s=421",
	} {
		if l, err := ParseRateLimit(bad); err == nil {
			t.Errorf("ParseRateLimit(%q) = %+v, want an error", bad, l)
		}
	}
}

// rcptOn runs RCPT for to on c, after a MAIL from from, and returns the code.
func rcptOn(t *testing.T, c *smtp.Client, from, to string) int {
	t.Helper()
	if err := c.Mail(from, nil); err != nil {
		t.Fatalf("MAIL: %v", err)
	}
	code := replyCode(c.Rcpt(to, nil))
	if err := c.Reset(); err != nil {
		t.Fatalf("RSET: %v", err)
	}
	return code
}

func TestRateLimitCountsUnderAFakeClock(t *testing.T) {
	clk := newFakeClock()
	srv := NewServer(t, WithClock(clk.Now), RateLimit("rcpt:*@gmail.test=3/min=451 4.7.28 Unusual rate"))
	c := dial(t, srv.Addr())
	codes := func(n int, to string) []int {
		var out []int
		for range n {
			out = append(out, rcptOn(t, c, "a@src.test", to))
		}
		return out
	}
	if got := codes(4, "x@gmail.test"); !slices.Equal(got, []int{250, 250, 250, 451}) {
		t.Fatalf("burst: %v, want 3 accepted then 451", got)
	}
	if got := codes(1, "x@other.test"); !slices.Equal(got, []int{250}) {
		t.Fatalf("another domain: %v, want 250 (not limited)", got)
	}
	clk.Advance(20 * time.Second) // 3/min: one token per 20 s
	if got := codes(2, "y@gmail.test"); !slices.Equal(got, []int{250, 451}) {
		t.Fatalf("after 20 s: %v, want one more", got)
	}
	clk.Advance(19 * time.Second)
	if got := codes(1, "y@gmail.test"); !slices.Equal(got, []int{451}) {
		t.Fatalf("after 19 s more: %v, want still refused (19 s is less than one token)", got)
	}
	clk.Advance(time.Hour)
	if got := codes(4, "z@GMAIL.test"); !slices.Equal(got, []int{250, 250, 250, 451}) {
		t.Fatalf("after an hour: %v, want a full bucket of 3 again", got)
	}
	events := srv.Events()
	if last := events[len(events)-1]; last.By != ByRateLimit || last.Reply != "451 4.7.28 Unusual rate" {
		t.Fatalf("refusal recorded as %+v", last)
	}
}

func TestRateLimitPerSenderDomain(t *testing.T) {
	clk := newFakeClock()
	srv := NewServer(t, WithClock(clk.Now), RateLimit("mail=1/min,per=sender=451 4.7.1 Slow down"))
	c := dial(t, srv.Addr())
	mail := func(from string) int {
		code := replyCode(c.Mail(from, nil))
		c.Reset()
		return code
	}
	got := []int{mail("a@one.test"), mail("b@two.test"), mail("c@ONE.test"), mail("d@two.test")}
	if !slices.Equal(got, []int{250, 250, 451, 451}) {
		t.Fatalf("per sender domain: %v, want each domain's first accepted", got)
	}
}

func TestRateLimitAtGreetingCloses(t *testing.T) {
	clk := newFakeClock()
	srv := NewServer(t, WithClock(clk.Now), RateLimit("greeting=2/min=421 4.7.0 Come back later"))
	for i := range 2 {
		c := dial(t, srv.Addr())
		if err := c.Hello("client.test"); err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
	}
	if code := greetingCode(t, srv.Addr()); code != "421 4.7.0 Come back later" {
		t.Fatalf("third greeting: %q", code)
	}
	clk.Advance(30 * time.Second)
	c := dial(t, srv.Addr())
	if err := c.Hello("client.test"); err != nil {
		t.Fatalf("after 30 s: %v, want a token back", err)
	}
}

// greetingCode reads the server's first line on a raw connection.
func greetingCode(t *testing.T, addr string) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(waitTimeout))
	buf := make([]byte, 512)
	n, _ := nc.Read(buf)
	line := string(buf[:n])
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	return line
}

func TestMaxConnsPerIP(t *testing.T) {
	srv := NewServer(t, MaxConnsPerIP("2=421 4.7.0 Too many connections"))
	first := dial(t, srv.Addr())
	if err := first.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	second := dial(t, srv.Addr())
	if err := second.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	if line := greetingCode(t, srv.Addr()); line != "421 4.7.0 Too many connections" {
		t.Fatalf("third connection greeted with %q", line)
	}
	first.Quit()
	srv.WaitFor(t, waitTimeout, func() bool { return srv.tl.openFrom("127.0.0.1") < 2 })
	third := dial(t, srv.Addr())
	if err := third.Hello("client.test"); err != nil {
		t.Fatalf("after one closed: %v", err)
	}
	var refused int
	for _, e := range srv.Events() {
		if e.By == ByConnLimit {
			refused++
		}
	}
	if refused != 1 {
		t.Fatalf("%d connection-limit refusals recorded, want 1", refused)
	}
	for _, bad := range []string{"0", "x", "2=250 OK", "2=drop", "-1"} {
		if _, err := ParseConnLimit(bad); err == nil {
			t.Errorf("ParseConnLimit(%q) accepted", bad)
		}
	}
}
