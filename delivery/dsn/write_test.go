package dsn

import (
	"bytes"
	"errors"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/goldenfile"
)

var (
	zone    = time.FixedZone("CET", 3600)
	arrival = time.Date(2025, 3, 14, 9, 26, 53, 0, zone)
	now     = arrival.Add(26 * time.Hour)
)

const originalMessage = "Received: from client.example.org (client.example.org [192.0.2.7])\r\n" +
	"\tby relay.example.com (relayq) with ESMTPS id 01JPAB3C4D5E6F7G8H9J0K1M2N\r\n" +
	"From: Alice <alice@example.org>\r\n" +
	"To: Bob <bob@example.net>, Carol <carol@example.net>\r\n" +
	"Subject: Quarterly numbers\r\n" +
	"Date: Fri, 14 Mar 2025 09:26:50 +0100\r\n" +
	"Message-ID: <20250314092650.1234@client.example.org>\r\n" +
	"MIME-Version: 1.0\r\n" +
	"Content-Type: text/plain; charset=us-ascii\r\n" +
	"\r\n" +
	"Hi Bob,\r\n" +
	"\r\n" +
	"the numbers are attached. Well, they will be.\r\n" +
	"\r\n" +
	"Alice\r\n"

func baseReport() Report {
	return Report{
		ReportingMTA: "relay.example.com",
		To:           "alice@example.org",
		Arrival:      arrival,
		Date:         now,
		MessageID:    "dsn.01JPAB3C4D5E6F7G8H9J0K1M2N.1@relay.example.com",
		Boundary:     "relayq-dsn-01JPAB3C4D5E6F7G8H9J0K1M2N",
		QueueID:      "01JPAB3C4D5E6F7G8H9J0K1M2N",
	}
}

func write(t *testing.T, r Report, original string) []byte {
	t.Helper()
	var buf bytes.Buffer
	var orig *strings.Reader
	if original != "" {
		orig = strings.NewReader(original)
	}
	var err error
	if orig == nil {
		err = Write(&buf, r, nil)
	} else {
		err = Write(&buf, r, orig)
	}
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	checkDSN(t, buf.Bytes(), r, original != "" && r.MaxReturn >= 0)
	return buf.Bytes()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name+".golden"), got)
}

func TestGoldenFailedHeadersOnly(t *testing.T) {
	r := baseReport()
	r.Recipients = []Recipient{{
		Final: "bob@example.net", Action: ActionFailed, Status: "5.1.1",
		RemoteMTA: "mx1.example.net", Diagnostic: "550 5.1.1 <bob@example.net>: Recipient address rejected: User unknown in virtual mailbox table",
		LastAttempt: now.Add(-time.Minute),
	}}
	out := write(t, r, originalMessage)
	golden(t, "failed_headers_only", out)
	if !bytes.Contains(out, []byte("Subject: Undelivered Mail Returned to Sender\r\n")) {
		t.Error("a failed report must say Undelivered Mail in its subject")
	}
	if bytes.Contains(out, []byte("the numbers are attached")) {
		t.Error("headers-only report contains the body of the original")
	}
}

func TestGoldenMixedWithORCPT(t *testing.T) {
	r := baseReport()
	r.EnvID = "QQ314159"
	r.Recipients = []Recipient{
		{Final: "bob@example.net", Original: "rfc822;Bob@Example.NET", Action: ActionFailed, Status: "5.1.1",
			RemoteMTA: "mx1.example.net", Diagnostic: "550 5.1.1 No such user", LastAttempt: now.Add(-time.Minute)},
		{Final: "carol@example.net", Original: "rfc822;carol@example.net", Action: ActionDelayed, Status: "4.7.1",
			RemoteMTA: "mx2.example.net", Diagnostic: "451 4.7.1 Greylisted, see http://postgrey.schweikert.ch/help/example.net.html",
			LastAttempt: now.Add(-2 * time.Minute), WillRetryUntil: arrival.Add(5 * 24 * time.Hour)},
		{Final: "dave@example.com", Action: ActionFailed, Status: "5.4.7",
			Diagnostic: "5.4.7 delivery time expired: 4.4.1 connect to mx.example.com: connection refused"},
	}
	out := write(t, r, originalMessage)
	golden(t, "mixed_orcpt", out)
	for _, want := range []string{
		"Original-Envelope-Id: QQ314159\r\n",
		"Original-Recipient: rfc822; Bob@Example.NET\r\nFinal-Recipient: rfc822; bob@example.net\r\n",
		"Diagnostic-Code: smtp; 451 4.7.1 Greylisted",
		"Diagnostic-Code: X-Relayq; 5.4.7 delivery time expired",
		"Will-Retry-Until: Wed, 19 Mar 2025 09:26:53 +0100\r\n",
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestGoldenReturnFull(t *testing.T) {
	r := baseReport()
	r.ReturnFull = true
	r.Recipients = []Recipient{{
		Final: "bob@example.net", Action: ActionFailed, Status: "5.2.2",
		RemoteMTA: "mx1.example.net", Diagnostic: "552 5.2.2 Mailbox full", LastAttempt: now,
	}}
	out := write(t, r, originalMessage)
	golden(t, "return_full", out)
	if !bytes.Contains(out, []byte("Content-Type: message/rfc822\r\n\r\n"+originalMessage)) {
		t.Error("RET=FULL report does not carry the original unchanged")
	}
}

func TestGoldenDelayed(t *testing.T) {
	r := baseReport()
	r.Recipients = []Recipient{{
		Final: "carol@example.net", Action: ActionDelayed, Status: "4.4.1",
		Diagnostic:  "4.4.1 connect to mx.example.net[198.51.100.25]:25: connection refused",
		LastAttempt: now, WillRetryUntil: arrival.Add(5 * 24 * time.Hour),
	}}
	out := write(t, r, originalMessage)
	golden(t, "delayed", out)
	if !bytes.Contains(out, []byte("Subject: Delayed Mail (still being retried)\r\n")) {
		t.Error("a delay warning must say so in its subject")
	}
	if bytes.Contains(out, []byte("Remote-MTA")) {
		t.Error("no Remote-MTA when no remote host answered")
	}
}

func TestWriteRejectsUnusableReports(t *testing.T) {
	ok := baseReport()
	ok.Recipients = []Recipient{{Final: "bob@example.net", Action: ActionFailed, Status: "5.1.1"}}
	tests := map[string]func(*Report){
		"null sender":    func(r *Report) { r.To = "" },
		"no recipients":  func(r *Report) { r.Recipients = nil },
		"no reporter":    func(r *Report) { r.ReportingMTA = "" },
		"no date":        func(r *Report) { r.Date = time.Time{} },
		"no message id":  func(r *Report) { r.MessageID = "" },
		"unknown action": func(r *Report) { r.Recipients = []Recipient{{Final: "x@y", Action: "bounced", Status: "5.0.0"}} },
		"bad status":     func(r *Report) { r.Recipients = []Recipient{{Final: "x@y", Action: ActionFailed, Status: "550"}} },
		"no final":       func(r *Report) { r.Recipients = []Recipient{{Action: ActionFailed, Status: "5.0.0"}} },
	}
	for name, mutate := range tests {
		r := ok
		mutate(&r)
		var buf bytes.Buffer
		if err := Write(&buf, r, strings.NewReader(originalMessage)); err == nil {
			t.Errorf("%s: Write succeeded", name)
		}
		if buf.Len() != 0 {
			t.Errorf("%s: wrote %d bytes despite the error", name, buf.Len())
		}
	}
	write(t, ok, originalMessage) // the unmutated report is fine
}

func TestWriteNoHeaderInjection(t *testing.T) {
	r := baseReport()
	r.To = "alice@example.org>\r\nBcc: victim@example.com"
	r.QueueID = "Q\nX-Evil: 1"
	r.Recipients = []Recipient{{
		Final: "bob@example.net\r\nX-Injected: yes", Original: "rfc822;a\rb@c", Action: ActionFailed, Status: "5.1.1",
		RemoteMTA: "mx\n.example.net", Diagnostic: "550 5.1.1 no\r\n\r\n--relayq-dsn-01JPAB3C4D5E6F7G8H9J0K1M2N--\r\nFinal-Recipient: rfc822; forged@x",
	}}
	out := write(t, r, originalMessage)
	for _, bad := range []string{"\r\nBcc:", "\r\nX-Evil:", "\r\nX-Injected:", "\r\nFinal-Recipient: rfc822; forged@x"} {
		if bytes.Contains(out, []byte(bad)) {
			t.Errorf("caller text started a line %q", bad)
		}
	}
}

func TestWriteBoundaryInContent(t *testing.T) {
	r := baseReport()
	r.ReturnFull = true
	r.Recipients = []Recipient{{Final: "bob@example.net", Action: ActionFailed, Status: "5.1.1"}}
	orig := "Subject: x\r\n\r\n--" + r.Boundary + "\r\nContent-Type: text/plain\r\n\r\nfake part\r\n--" + r.Boundary + "--\r\n"
	out := write(t, r, orig) // checkDSN fails if the parts were split wrongly
	if bytes.Contains(out, []byte(`boundary="`+r.Boundary+`"`)) {
		t.Error("kept a boundary that occurs in the original")
	}
}

func TestWriteAcceptsAnyBoundary(t *testing.T) {
	r := baseReport()
	r.Recipients = []Recipient{{Final: "bob@example.net", Action: ActionFailed, Status: "5.1.1"}}
	for in, want := range map[string]string{
		"":                       `boundary="relayq-dsn"`,
		"has space\r\n\"quote\"": `boundary="hasspacequote"`,
		"01JPAB3C4D5E6F7G8H9J0K1M2N/1741940813000000000/a-rather-long-relay-host.example.com": `boundary="01JPAB3C4D5E6F7G8H9J0K1M2N/1741940813000000000/a-rather-long-relay-hos"`,
	} {
		r.Boundary = in
		if out := write(t, r, originalMessage); !bytes.Contains(out, []byte(want)) {
			t.Errorf("boundary %q: output lacks %s", in, want)
		}
	}
}

func TestWriteNormalisesOriginal(t *testing.T) {
	r := baseReport()
	r.ReturnFull = true
	r.Recipients = []Recipient{{Final: "bob@example.net", Action: ActionFailed, Status: "5.1.1"}}
	long := strings.Repeat("x", 2500)
	orig := "Subject: bare LF\nX-Long: " + long + "\r\n\rbody with bare CR\rand LF\n" + long + "\n"
	parts := checkDSN(t, write(t, r, orig), r, true)
	_, body, _ := bytes.Cut(parts[2], []byte("\r\n\r\n"))
	// "X-Long: " is 8 octets: 990 x fill the first line, then folded
	// continuations of a space and 997 x.
	want := "Subject: bare LF\r\nX-Long: " + long[:990] + "\r\n " + long[990:990+997] + "\r\n " + long[990+997:] + "\r\n" +
		"\r\nbody with bare CR\r\nand LF\r\n" + long[:998] + "\r\n" + long[998:1996] + "\r\n" + long[1996:] + "\r\n"
	if string(body) != want {
		t.Errorf("normalised original differs (%d bytes, want %d):\n%.300q\nwant\n%.300q", len(body), len(want), body, want)
	}
}

func TestWriteTruncatesAtLine(t *testing.T) {
	r := baseReport()
	r.ReturnFull = true
	r.MaxReturn = 200
	r.Recipients = []Recipient{{Final: "bob@example.net", Action: ActionFailed, Status: "5.1.1"}}
	parts := checkDSN(t, write(t, r, originalMessage), r, true)
	_, body, _ := bytes.Cut(parts[2], []byte("\r\n\r\n"))
	if len(body) > 200 || !strings.HasPrefix(originalMessage, string(body)) || !bytes.HasSuffix(body, []byte("\r\n")) {
		t.Errorf("truncated original is not a line-aligned prefix of at most 200 bytes: %q", body)
	}
	if !bytes.Contains(parts[0], []byte("The first "+strconv.Itoa(len(body))+" bytes of your message")) {
		t.Errorf("human text does not say the original was cut:\n%s", parts[0])
	}

	r.MaxReturn = -1 // return nothing
	if out := write(t, r, originalMessage); bytes.Contains(out, []byte("Quarterly numbers")) {
		t.Error("MaxReturn -1 still returned the original")
	}

	r.MaxReturn = math.MaxInt64 // no overflow when asking for one byte more
	parts = checkDSN(t, write(t, r, originalMessage), r, true)
	if !bytes.HasSuffix(parts[2], []byte(originalMessage)) {
		t.Error("MaxReturn MaxInt64 did not return the whole original")
	}
}

func TestWriteNonASCIIAddresses(t *testing.T) {
	r := baseReport()
	r.To = "álvaro@exämple.org"
	r.Recipients = []Recipient{{
		Final: "用户@例子.广告", Original: "utf-8;用户@例子.广告", Action: ActionFailed, Status: "5.1.1",
		Diagnostic: "550 5.1.1 Пользователь не найден",
	}}
	out := write(t, r, originalMessage)
	unfolded := bytes.ReplaceAll(out, []byte("\r\n "), []byte(" "))
	for _, want := range []string{
		`Final-Recipient: utf-8; \x{7528}\x{6237}@\x{4F8B}\x{5B50}.\x{5E7F}\x{544A}` + "\r\n",
		`Original-Recipient: utf-8; \x{7528}\x{6237}@\x{4F8B}\x{5B50}.\x{5E7F}\x{544A}` + "\r\n",
		// RFC 6533 EmbeddedUnicodeChar, not '?': the code stays readable.
		`Diagnostic-Code: smtp; 550 5.1.1 \x{41F}\x{43E}\x{43B}\x{44C}\x{437}\x{43E}\x{432}\x{430}\x{442}\x{435}\x{43B}\x{44C} \x{43D}\x{435} \x{43D}\x{430}\x{439}\x{434}\x{435}\x{43D}` + "\r\n",
		"To: <álvaro@exämple.org>\r\n",
		"<用户@例子.广告>\r\n",                      // the human text keeps UTF-8
		"Content-Transfer-Encoding: 8bit\r\n", // and says so
	} {
		if !bytes.Contains(out, []byte(want)) && !bytes.Contains(unfolded, []byte(want)) {
			t.Errorf("output lacks %q", want)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteReportsWriterError(t *testing.T) {
	r := baseReport()
	r.Recipients = []Recipient{{Final: "bob@example.net", Action: ActionFailed, Status: "5.1.1"}}
	if err := Write(failingWriter{}, r, nil); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Write to a failing writer: %v", err)
	}
}

func BenchmarkWrite(b *testing.B) {
	r := baseReport()
	r.ReturnFull = true
	r.Recipients = []Recipient{
		{Final: "bob@example.net", Original: "rfc822;bob@example.net", Action: ActionFailed, Status: "5.1.1",
			RemoteMTA: "mx1.example.net", Diagnostic: "550 5.1.1 No such user", LastAttempt: now},
		{Final: "carol@example.net", Action: ActionDelayed, Status: "4.7.1", RemoteMTA: "mx2.example.net",
			Diagnostic: "451 4.7.1 Greylisted", LastAttempt: now, WillRetryUntil: now.Add(96 * time.Hour)},
	}
	orig := originalMessage + strings.Repeat("A line of the body of a reasonably sized message.\r\n", 600) // ~30 KB
	b.SetBytes(int64(len(orig)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Write(&bytes.Buffer{}, r, strings.NewReader(orig)); err != nil {
			b.Fatal(err)
		}
	}
}
