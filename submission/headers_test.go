package submission

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// FuzzHeaderScan: whatever the bytes and however they are split, the scan
// passes every byte on unchanged when it adds nothing, and with add set it
// only ever inserts whole header lines.
func FuzzHeaderScan(f *testing.F) {
	f.Add([]byte("Subject: a\r\nMessage-ID: <x@y>\r\n\r\nbody\r\n"), uint8(3))
	f.Add([]byte("\r\nbody"), uint8(1))
	f.Add([]byte("Subject: a\r\n b\r\n"), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, split uint8) {
		for _, add := range []bool{false, true} {
			var out bytes.Buffer
			h := &headerScan{w: &out}
			if add {
				h.add = func() (string, time.Time) { return "<id@host>", time.Unix(0, 0).UTC() }
			}
			n := int(split)%8 + 1
			for p := in; len(p) > 0; {
				k := min(n, len(p))
				if w, err := h.Write(p[:k]); err != nil || w != k {
					t.Fatalf("Write = %d, %v", w, err)
				}
				p = p[k:]
			}
			if err := h.finish(); err != nil {
				t.Fatal(err)
			}
			if !add && !bytes.Equal(out.Bytes(), in) {
				t.Fatalf("changed without add:\n%q\n%q", in, out.Bytes())
			}
			if add {
				got := out.String()
				for _, l := range []string{"Message-ID: <id@host>\r\n", "Date: Thu, 01 Jan 1970 00:00:00 +0000\r\n"} {
					got = strings.Replace(got, l, "", 1)
				}
				if got != string(in) {
					t.Fatalf("more than whole header lines added:\n%q\n%q", in, out.Bytes())
				}
			}
		}
	})
}

// parseSplit is the first form of headerScan.parse (strings.Split, ToLower
// per field): the in-place one must find the same fields.
func parseSplit(sec []byte) (messageID, subject string, hasDate bool) {
	var name string
	var val strings.Builder
	done := func() {
		switch strings.ToLower(name) {
		case "message-id":
			if messageID == "" {
				messageID = trimField(val.String())
			}
		case "subject":
			if subject == "" {
				subject = trimField(val.String())
			}
		case "date":
			hasDate = true
		}
		name = ""
		val.Reset()
	}
	for _, line := range strings.Split(string(sec), "\r\n") {
		if line != "" && (line[0] == ' ' || line[0] == '\t') {
			if name != "" && val.Len() < 998 {
				val.WriteString(line)
			}
			continue
		}
		done()
		if n, v, ok := strings.Cut(line, ":"); ok && !strings.ContainsAny(n, " \t") {
			name = n
			val.WriteString(v)
		}
	}
	done()
	return messageID, subject, hasDate
}

func FuzzHeaderParseAgrees(f *testing.F) {
	f.Add([]byte("Subject: a\r\n b\r\nMessage-ID: <x@y>\r\nDATE: x\r\n"))
	f.Add([]byte("message-ID:\r\n\t<x@y>  \r\nsubject :no\r\nSUBJECT: yes\r\n" + strings.Repeat(" fold", 300) + "\r\n"))
	f.Add([]byte(":x\r\n y\r\nSub ject: z\r\nmessage-\u0130d: k\r\n\xffDate: 1"))
	f.Fuzz(func(t *testing.T, sec []byte) {
		var h headerScan
		hasDate := h.parse(sec)
		mid, subj, date := parseSplit(sec)
		if h.messageID != mid || h.subject != subj || hasDate != date {
			t.Fatalf("parse(%q) = %q, %q, %v; want %q, %q, %v", sec, h.messageID, h.subject, hasDate, mid, subj, date)
		}
	})
}
