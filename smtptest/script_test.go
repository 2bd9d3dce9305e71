package smtptest

import (
	"strings"
	"testing"
	"time"
)

const sampleScript = `--greylist 3s
--greylist-expiry 4h0m0s
--reply rcpt:nobody@=550 5.1.1 No such user
--reply greeting#1=421 4.3.2 Busy
--rate-limit rcpt:*@gmail.test=10/min=421 4.7.28 Our system has detected an unusual rate of mail
--max-conns-per-ip 2=421 4.7.0 Too many connections
`

func TestScriptRoundTrip(t *testing.T) {
	sc, err := ParseScript("# comment\n\n" + strings.ReplaceAll(sampleScript, "--greylist 3s", "greylist=3s"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Greylist != 3*time.Second || len(sc.Rules) != 2 || len(sc.RateLimits) != 1 || sc.ConnLimit.Max != 2 {
		t.Fatalf("parsed %+v", sc)
	}
	if got := sc.String(); got != sampleScript {
		t.Fatalf("String:\n%s\nwant:\n%s", got, sampleScript)
	}
}

func TestScriptErrorsAreOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"--greylist 3s\n--reply rcpt=hello\n": `line 2: --reply "rcpt=hello": bad reply code "hello"`,
		"--rate-limit rcpt=10/min":            `line 1: --rate-limit "rcpt=10/min": missing '=REPLY' after the rate`,
		"--greylist soon":                     `line 1: --greylist "soon": time: invalid duration "soon"`,
		"--replies rcpt=550":                  `line 1: --replies "rcpt=550": unknown setting (want greylist, greylist-expiry, greylist-text, reply, rate-limit, limit-per-client, max-conns-per-ip or persona)`,
	} {
		_, err := ParseScript(in)
		if err == nil || err.Error() != want {
			t.Errorf("ParseScript(%q) error:\n got %v\nwant %s", in, err, want)
		}
	}
}

func TestHTTPScriptGetAndPut(t *testing.T) {
	srv := NewServer(t, Greylist(time.Minute))
	base := startAPI(t, srv)
	if status, body := do(t, "GET", base+"/api/v1/script", ""); status != 200 || body != "--greylist 1m0s\n" {
		t.Fatalf("GET script: %d %q", status, body)
	}
	status, body := do(t, "PUT", base+"/api/v1/script", sampleScript)
	if status != 200 || body != sampleScript {
		t.Fatalf("PUT script: %d %q", status, body)
	}
	if got := srv.Script().String(); got != sampleScript {
		t.Fatalf("script in force:\n%s", got)
	}
	status, body = do(t, "PUT", base+"/api/v1/script", "--reply rcpt=550\n--reply quit=421\n")
	if status != 400 || apiErrorOf(t, body) != "line 2: --reply \"quit=421\": unknown stage \"quit\" (want greeting, ehlo, mail, rcpt or data)" {
		t.Fatalf("bad PUT: %d %q, want 400 and one line", status, body)
	}
	if got := srv.Script().String(); got != sampleScript {
		t.Fatalf("a refused PUT changed the script to:\n%s", got)
	}
}

// A script replaced while a client is between RCPT commands applies to its
// next command, on the same connection, and the transaction completes.
func TestScriptReplacedMidTransaction(t *testing.T) {
	srv := NewServer(t)
	base := startAPI(t, srv)
	c := dial(t, srv.Addr())
	if err := c.Mail("a@src.test", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("first@dst.test", nil); err != nil {
		t.Fatal(err)
	}
	if status, body := do(t, "PUT", base+"/api/v1/script", "--reply rcpt:second@=550 5.1.1 Gone\n--greylist 1h\n"); status != 200 {
		t.Fatalf("PUT: %d %s", status, body)
	}
	wantCode(t, c.Rcpt("second@dst.test", nil), 550, [3]int{5, 1, 1}, "Gone")
	wantCode(t, c.Rcpt("third@dst.test", nil), 451, [3]int{4, 7, 1}, "Greylisted")
	if err := sendData(c, testBody); err != nil {
		t.Fatalf("DATA after the script changed: %v", err)
	}
	if err := c.Quit(); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 || len(msgs[0].To) != 1 || msgs[0].To[0] != "first@dst.test" {
		t.Fatalf("messages = %+v, want one to first@dst.test", msgs)
	}
	if n := srv.Connections(); n != 1 {
		t.Fatalf("%d connections, want the one that lived through the change", n)
	}
}

// FuzzParseScript checks that a script from PUT /api/v1/script never
// panics the parser, and that whatever parses prints back to text that
// parses to the same script.
func FuzzParseScript(f *testing.F) {
	f.Add(sampleScript)
	f.Add("--rate-limit mail=5/h,per=sender=451\n--max-conns-per-ip 3\n")
	f.Add("greylist=1s\n# comment\n--greylist-text Greylisted, see http://x\n")
	f.Add("--rate-limit rcpt:*@*=1/1ns=421\n--reply rcpt:a*b#2=delay 1s\n")
	f.Fuzz(func(t *testing.T, text string) {
		sc, err := ParseScript(text)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error for %q spans lines: %q", text, err)
			}
			return
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("ParseScript(%q) returned an invalid script: %v", text, err)
		}
		printed := sc.String()
		again, err := ParseScript(printed)
		if err != nil {
			t.Fatalf("ParseScript(%q) -> %q does not parse: %v", text, printed, err)
		}
		if again.String() != printed {
			t.Fatalf("round trip of %q: %q, then %q", text, printed, again.String())
		}
	})
}
