package submission

import (
	"net/netip"
	"time"
	"unicode/utf8"

	"github.com/relayq/relayq/queue"
)

type receivedInfo struct {
	Helo, Hostname, ID string
	// With replaces the RFC 3848 protocol keyword when set ("HTTP").
	With            string
	IP              netip.Addr
	TLS, Auth, UTF8 bool
	Rcpts           []queue.Recipient
	Now             time.Time
}

// receivedHeader builds the trace header RFC 5321 section 4.4 requires of
// every relay. The protocol keyword follows RFC 3848 (ESMTP, ESMTPS, ESMTPA,
// ESMTPSA; UTF8 variants from RFC 6531). The "for" clause names the
// recipient only when there is exactly one, so a message to many does not
// reveal the others. A submission that is not SMTP names its own protocol
// (With: "HTTP", "HTTPS") and, having no HELO, is "from unknown". A
// message stored under no queue ID (an Inbound report) has no "id" clause.
func receivedHeader(i receivedInfo) []byte {
	proto := "ESMTP"
	if i.UTF8 {
		proto = "UTF8SMTP"
	}
	b := make([]byte, 0, 160+len(i.Helo)+len(i.Hostname))
	b = append(b, "Received: from "...)
	b = appendHelo(b, i.Helo)
	b = append(b, " (["...)
	b = appendIPLiteral(b, i.IP)
	b = append(b, "])\r\n\tby "...)
	b = appendHelo(b, i.Hostname)
	b = append(b, " (relayq) with "...)
	if i.With != "" {
		b = append(b, i.With...)
	} else {
		b = append(b, proto...)
		if i.TLS {
			b = append(b, 'S')
		}
		if i.Auth {
			b = append(b, 'A')
		}
	}
	if i.ID != "" {
		b = append(b, " id "...)
		b = append(b, i.ID...)
	}
	if len(i.Rcpts) == 1 {
		b = append(b, "\r\n\tfor <"...)
		b = appendAddr(b, i.Rcpts[0].Address)
		b = append(b, '>')
	}
	b = append(b, ";\r\n\t"...)
	b = i.Now.AppendFormat(b, time.RFC1123Z)
	return append(b, "\r\n"...)
}

// appendIPLiteral appends ip as an address literal's content.
func appendIPLiteral(b []byte, ip netip.Addr) []byte {
	if !ip.IsValid() {
		return append(b, "unknown"...)
	}
	if ip.Is6() {
		b = append(b, "IPv6:"...)
	}
	return ip.AppendTo(b)
}

// appendHelo appends h keeping only characters that can appear in a domain
// or address literal, so a hostile HELO cannot inject header lines or
// comments; at most 255 of them, "unknown" for none.
func appendHelo(b []byte, h string) []byte {
	if h == "" {
		return append(b, "unknown"...)
	}
	for i := 0; i < len(h) && i < 255; i++ {
		c := h[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '.', c == '-', c == '_', c == ':', c == '[', c == ']':
			b = append(b, c)
		default:
			b = append(b, '?')
		}
	}
	return b
}

// appendAddr appends a with control characters and angle brackets
// replaced, so it cannot end the "for <...>" clause or the header.
func appendAddr(b []byte, a string) []byte {
	for _, r := range a {
		if r < 0x20 || r == 0x7f || r == '<' || r == '>' {
			r = '?'
		}
		b = utf8.AppendRune(b, r)
	}
	return b
}
