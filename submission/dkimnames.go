package submission

import (
	"bytes"
	"strings"
)

// signatureNames names the DKIM signatures in prefix (the header fields
// the signer put in front of the message): "domain/selector" for each
// DKIM-Signature field, from its d= and s= tags (RFC 6376 section 3.5),
// space-separated, for the queue's record of how a message was accepted.
func signatureNames(prefix []byte) string {
	var names []string
	for _, field := range headerFields(prefix) {
		name, value, ok := strings.Cut(field, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "DKIM-Signature") {
			continue
		}
		var d, s string
		for tag := range strings.SplitSeq(value, ";") {
			k, v, _ := strings.Cut(tag, "=")
			switch strings.TrimSpace(k) {
			case "d":
				d = strings.Join(strings.Fields(v), "")
			case "s":
				s = strings.Join(strings.Fields(v), "")
			}
		}
		if d != "" && s != "" {
			names = append(names, d+"/"+s)
		}
	}
	return strings.Join(names, " ")
}

// headerFields splits header fields, unfolding continuation lines.
func headerFields(b []byte) []string {
	var out []string
	for line := range bytes.Lines(b) {
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') && len(out) > 0 {
			out[len(out)-1] += string(line)
			continue
		}
		out = append(out, string(line))
	}
	return out
}
