package dsn

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkDSN asserts what every Write output must satisfy, whatever went in:
// CRLF only, short lines, well-formed header sections, a multipart/report
// whose parts a MIME parser finds, and a 7-bit delivery-status part with one
// group per recipient. It returns the raw bytes of each part.
func checkDSN(t *testing.T, out []byte, r Report, withOriginal bool) [][]byte {
	t.Helper()
	checkLines(t, out)

	header, body, ok := bytes.Cut(out, []byte("\r\n\r\n"))
	if !ok {
		t.Fatal("no end of header section")
	}
	boundary := checkMessageHeader(t, header)

	// Raw parts, split by hand so their header lines can be checked as bytes.
	raw := splitParts(t, body, boundary, withOriginal)
	checkPartHeaders(t, raw, r.global())
	_, status, _ := bytes.Cut(raw[1], []byte("\r\n\r\n"))
	checkStatus(t, status, r)

	// And a real MIME parser agrees on the structure.
	checkMultipartAgrees(t, body, boundary, raw)
	return raw
}

// checkLines fails on a bare CR or LF, a missing final CRLF or a line
// over 998 octets.
func checkLines(t *testing.T, out []byte) {
	t.Helper()
	for i, c := range out {
		if c == '\n' && (i == 0 || out[i-1] != '\r') {
			t.Fatalf("bare LF at %d: %q", i, around(out, i))
		}
		if c == '\r' && (i+1 == len(out) || out[i+1] != '\n') {
			t.Fatalf("bare CR at %d: %q", i, around(out, i))
		}
	}
	if !bytes.HasSuffix(out, []byte("\r\n")) {
		t.Fatal("output does not end in CRLF")
	}
	for _, line := range bytes.Split(out, []byte("\r\n")) {
		if len(line) > 998 {
			t.Fatalf("line of %d octets: %.80q...", len(line), line)
		}
	}
}

// checkMessageHeader checks the DSN's top-level header fields and returns
// the multipart boundary.
func checkMessageHeader(t *testing.T, header []byte) string {
	t.Helper()
	fields := checkHeaderLines(t, "message", header)
	for _, name := range []string{"From", "To", "Subject", "Date", "Message-Id", "Auto-Submitted", "Mime-Version", "Content-Type"} {
		if len(fields[name]) != 1 {
			t.Fatalf("header %s appears %d times, want once", name, len(fields[name]))
		}
	}
	if got := fields["Auto-Submitted"][0]; got != "auto-replied" {
		t.Fatalf("Auto-Submitted: %q", got)
	}
	mt, params, err := mime.ParseMediaType(fields["Content-Type"][0])
	if err != nil || mt != "multipart/report" || params["report-type"] != "delivery-status" || params["boundary"] == "" {
		t.Fatalf("Content-Type %q: %v %v", fields["Content-Type"][0], params, err)
	}
	return params["boundary"]
}

// splitParts splits body at boundary into the raw parts, 2 or, with the
// original message, 3.
func splitParts(t *testing.T, body []byte, boundary string, withOriginal bool) [][]byte {
	t.Helper()
	rest := append([]byte("\r\n"), body...)
	end := []byte("\r\n--" + boundary + "--\r\n")
	if !bytes.HasSuffix(rest, end) {
		t.Fatalf("does not end with the closing delimiter %q", end)
	}
	rest = rest[:len(rest)-len(end)]
	raw := bytes.Split(rest, []byte("\r\n--"+boundary+"\r\n"))[1:]
	want := 2
	if withOriginal {
		want = 3
	}
	if len(raw) != want {
		t.Fatalf("%d parts, want %d", len(raw), want)
	}
	return raw
}

// checkPartHeaders checks each part's header lines and Content-Type
// (global: the status part is message/global-delivery-status).
func checkPartHeaders(t *testing.T, raw [][]byte, global bool) {
	t.Helper()
	types := []string{"text/plain", "message/delivery-status\r", ""}
	if global {
		types[1] = "message/global-delivery-status\r"
	}
	for i, p := range raw {
		ph, _, ok := bytes.Cut(p, []byte("\r\n\r\n"))
		if !ok {
			t.Fatalf("part %d has no end of header section", i)
		}
		pf := checkHeaderLines(t, "part", ph)
		if ct := pf["Content-Type"]; len(ct) != 1 || (types[i] != "" && !strings.HasPrefix(ct[0]+"\r", types[i])) {
			t.Fatalf("part %d Content-Type %q, want %s", i, ct, types[i])
		}
	}
}

// checkMultipartAgrees fails unless mime/multipart sees as many parts as
// splitParts did.
func checkMultipartAgrees(t *testing.T, body []byte, boundary string, raw [][]byte) {
	t.Helper()
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	n := 0
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("multipart part %d: %v", n, err)
		}
		if _, err := io.Copy(io.Discard, p); err != nil {
			t.Fatalf("multipart part %d: %v", n, err)
		}
		n++
	}
	if n != len(raw) {
		t.Fatalf("mime/multipart sees %d parts, we split %d", n, len(raw))
	}
}

// checkHeaderLines asserts that block is a header section in the strict
// RFC 5322 §2.2 sense: each line either "Name: value" with a printable
// name, or a continuation starting with whitespace and holding more than
// whitespace. It returns the unfolded values by canonical name.
func checkHeaderLines(t *testing.T, what string, block []byte) map[string][]string {
	t.Helper()
	fields := map[string][]string{}
	last := ""
	for _, line := range strings.Split(string(block), "\r\n") {
		if line == "" {
			t.Fatalf("%s header: empty line inside header section", what)
		}
		if line[0] == ' ' || line[0] == '\t' {
			if last == "" || strings.TrimSpace(line) == "" {
				t.Fatalf("%s header: bad continuation line %q", what, line)
			}
			v := fields[last]
			v[len(v)-1] += line
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" || strings.IndexFunc(name, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
			t.Fatalf("%s header: malformed line %q", what, line)
		}
		last = canonical(name)
		fields[last] = append(fields[last], strings.TrimSpace(value))
	}
	return fields
}

func canonical(name string) string {
	parts := strings.Split(strings.ToLower(name), "-")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "-")
}

// checkStatus asserts the delivery-status body is 7-bit (valid UTF-8 in a
// message/global-delivery-status), has the per-message group and one
// group per recipient with the required fields.
func checkStatus(t *testing.T, status []byte, r Report) {
	t.Helper()
	if r.global() && !utf8.Valid(status) {
		t.Fatalf("global-delivery-status is not UTF-8: %q", status)
	}
	for i, c := range status {
		if c >= 0x80 && !r.global() {
			t.Fatalf("delivery-status is not 7-bit at %d: %q", i, around(status, i))
		}
	}
	groups := strings.Split(strings.TrimSuffix(string(status), "\r\n"), "\r\n\r\n")
	if len(groups) != 1+len(r.Recipients) {
		t.Fatalf("delivery-status has %d groups, want %d:\n%s", len(groups), 1+len(r.Recipients), status)
	}
	perMessage := checkHeaderLines(t, "per-message", []byte(groups[0]))
	if len(perMessage["Reporting-Mta"]) != 1 {
		t.Fatalf("per-message fields lack Reporting-MTA: %q", groups[0])
	}
	for i, g := range groups[1:] {
		f := checkHeaderLines(t, "per-recipient", []byte(g))
		if len(f["Final-Recipient"]) != 1 || len(f["Status"]) != 1 || len(f["Action"]) != 1 {
			t.Fatalf("recipient %d lacks required fields: %q", i, g)
		}
		if f["Action"][0] != r.Recipients[i].Action || f["Status"][0] != r.Recipients[i].Status {
			t.Fatalf("recipient %d: Action %q Status %q, want %q %q", i, f["Action"], f["Status"], r.Recipients[i].Action, r.Recipients[i].Status)
		}
	}
}

func around(b []byte, i int) []byte {
	return b[max(0, i-20):min(len(b), i+20)]
}
