package report

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message"
	"github.com/relayq/relayq/internal/goldenfile"
)

var (
	arrival = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	orig    = Original{
		ID: "7", From: "bounces+42@app.test", Rcpt: "gone@example.test", ClientIP: "127.0.0.1", Arrival: arrival,
		Data: []byte("From: App <noreply@app.test>\r\nTo: gone@example.test\r\nSubject: Your receipt\r\nMessage-ID: <r1@app.test>\r\n\r\nThanks!\r\n"),
	}
	reporter = Reporter{Host: "fakemx.localhost", Date: arrival.Add(2 * time.Second), Seq: 1}
)

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

// parts reads a multipart/report and returns its report-type and the
// content types and bodies of its parts, as a mail client would see them.
func parts(t *testing.T, raw []byte) (reportType string, types []string, bodies []string) {
	t.Helper()
	e, err := message.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	mt, params, err := e.Header.ContentType()
	if err != nil || mt != "multipart/report" {
		t.Fatalf("Content-Type %q (%v), want multipart/report", mt, err)
	}
	mr := e.MultipartReader()
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ct, _, _ := p.Header.ContentType()
		b, _ := io.ReadAll(p.Body)
		types = append(types, ct)
		bodies = append(bodies, string(b))
	}
	return params["report-type"], types, bodies
}

func TestBounceIsAnRFC3464Report(t *testing.T) {
	raw := Bounce(orig, reporter, [3]int{5, 1, 1}, "The email account that you tried to reach does not exist.")
	golden(t, "bounce.golden", raw)
	rt, types, bodies := parts(t, raw)
	if rt != "delivery-status" || strings.Join(types, ",") != "text/plain,message/delivery-status,text/rfc822-headers" {
		t.Fatalf("report-type %q, parts %v", rt, types)
	}
	for _, want := range []string{
		"Reporting-MTA: dns; fakemx.localhost\r\n", "Arrival-Date: Wed, 02 Jan 2030 03:04:05 +0000\r\n",
		"\r\n\r\nFinal-Recipient: rfc822; gone@example.test\r\n", "Action: failed\r\n", "Status: 5.1.1\r\n",
		"Diagnostic-Code: smtp; 550 5.1.1 The email account that you tried to reach does not exist.\r\n",
	} {
		if !strings.Contains(bodies[1], want) {
			t.Errorf("delivery-status lacks %q:\n%s", want, bodies[1])
		}
	}
	if !strings.Contains(bodies[2], "Subject: Your receipt\r\n") || strings.Contains(bodies[2], "Thanks!") {
		t.Errorf("text/rfc822-headers should be the original's headers only:\n%s", bodies[2])
	}
}

func TestComplaintIsAnRFC5965Report(t *testing.T) {
	raw := Complaint(orig, reporter, "abuse")
	golden(t, "complaint.golden", raw)
	rt, types, bodies := parts(t, raw)
	if rt != "feedback-report" || strings.Join(types, ",") != "text/plain,message/feedback-report,message/rfc822" {
		t.Fatalf("report-type %q, parts %v", rt, types)
	}
	for _, want := range []string{
		"Feedback-Type: abuse\r\n", "User-Agent: fakemx/1\r\n", "Version: 1\r\n",
		"Original-Mail-From: <bounces+42@app.test>\r\n", "Original-Rcpt-To: <gone@example.test>\r\n",
		"Arrival-Date: Wed, 02 Jan 2030 03:04:05 +0000\r\n", "Source-IP: 127.0.0.1\r\n",
	} {
		if !strings.Contains(bodies[1], want) {
			t.Errorf("feedback-report lacks %q:\n%s", want, bodies[1])
		}
	}
	if bodies[2] != string(orig.Data) {
		t.Errorf("message/rfc822 part is not the original:\n%q", bodies[2])
	}
}

func TestComplaintAbout8BitMailAttachesOnlyHeaders(t *testing.T) {
	o := orig
	o.Data = []byte("Subject: caf\xc3\xa9\r\n\r\nd\xc3\xa9j\xc3\xa0\r\n")
	_, types, _ := parts(t, Complaint(o, reporter, "abuse"))
	if types[2] != "text/rfc822-headers" {
		t.Fatalf("third part %q, want text/rfc822-headers for 8-bit mail", types[2])
	}
}

func TestFieldsStayOneLine(t *testing.T) {
	o := orig
	o.Rcpt = "a@b.test\r\nBcc: evil@x.test"
	raw := Bounce(o, reporter, [3]int{5, 1, 1}, "no\r\nX-Injected: 1")
	if bytes.Contains(raw, []byte("\r\nBcc:")) || bytes.Contains(raw, []byte("\r\nX-Injected:")) {
		t.Fatalf("a CR LF in foreign text started a new field:\n%s", raw)
	}
}
