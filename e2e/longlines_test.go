package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
	"github.com/relayq/relayq/smtptest"
)

// needDkimpy skips (or, under CI, fails) when dkimpy is not installed for
// the interpreter dkimtest uses.
func needDkimpy(t *testing.T) {
	t.Helper()
	if err := exec.Command(dkimtest.Python, "-c", "import dkim").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s cannot import dkim: install Debian's python3-dkim", dkimtest.Python)
		}
		t.Skipf("%s cannot import dkim (%v): install Debian's python3-dkim to run this test", dkimtest.Python, err)
	}
}

// A 1,500-octet HTML line (RFC 5322 section 2.1.1 allows 998) goes through
// a Postfix hop with its DKIM signature intact: relayq encodes the part as
// quoted-printable before signing, so Postfix has nothing to fold, and
// what arrives verifies with go-msgauth and dkimpy and decodes to the HTML
// that was submitted. (Sent as it was, Postfix folded the line at 998 and
// every verifier failed.)
func TestLongLineThroughPostfixKeepsDKIM(t *testing.T) {
	needDkimpy(t)
	sink := smtptest.NewServer(t)
	pf := startPostfix(t, sink.Addr())
	recs := dkimtest.Records{}
	key := keygen(t, t.TempDir(), "example.org", "s1", "rsa", recs)
	r := startRelay(t, pf, withYAML(dkimSection("example.org", "s1", key)))
	html := "<table>" + strings.Repeat("<tr><td>tok-long</td></tr>", 50) + "</table>"
	html += strings.Repeat("x", 1500-len(html))
	msg := "From: App <app@example.org>\r\nTo: <bob@example.net>\r\nSubject: template\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=\"alt\"\r\n\r\n" +
		"--alt\r\nContent-Type: text/plain\r\n\r\nshort text\r\n" +
		"--alt\r\nContent-Type: text/html; charset=us-ascii\r\n\r\n" + html + "\r\n--alt--\r\n"
	sendAccepted(t, r.addr, "app@example.org", "bob@example.net", msg, "message with a 1500-octet line not accepted")
	got := waitMessage(t, sink, 60*time.Second, func(m smtptest.Message) bool { return m.From == "app@example.org" })
	longest := 0
	for _, l := range strings.Split(string(got), "\r\n") {
		longest = max(longest, len(l))
	}
	t.Logf("longest line after the Postfix hop: %d octets", longest)
	if longest > 998 {
		t.Errorf("a %d-octet line reached the sink", longest)
	}
	dkimtest.Verify(t, got, recs)
	want, have := leafParts(t, []byte(msg)), leafParts(t, got)
	if strings.Join(want, "\x00") != strings.Join(have, "\x00") {
		t.Fatalf("decoded parts differ:\n got %q\nwant %q", have, want)
	}
}
