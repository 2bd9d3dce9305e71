package submission

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

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
// reveal the others.
func receivedHeader(i receivedInfo) []byte {
	proto := "ESMTP"
	if i.UTF8 {
		proto = "UTF8SMTP"
	}
	if i.TLS {
		proto += "S"
	}
	if i.Auth {
		proto += "A"
	}
	if i.With != "" {
		proto = i.With
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Received: from %s ([%s])\r\n\tby %s (relayq) with %s id %s",
		sanitizeHelo(i.Helo), ipLiteral(i.IP), sanitizeHelo(i.Hostname), proto, i.ID)
	if len(i.Rcpts) == 1 {
		fmt.Fprintf(&b, "\r\n\tfor <%s>", sanitizeAddr(i.Rcpts[0].Address))
	}
	fmt.Fprintf(&b, ";\r\n\t%s\r\n", i.Now.Format(time.RFC1123Z))
	return []byte(b.String())
}

func ipLiteral(ip netip.Addr) string {
	if !ip.IsValid() {
		return "unknown"
	}
	if ip.Is6() {
		return "IPv6:" + ip.String()
	}
	return ip.String()
}

// sanitizeHelo keeps only characters that can appear in a domain or address
// literal, so a hostile HELO cannot inject header lines or comments.
func sanitizeHelo(h string) string {
	var b strings.Builder
	for i := 0; i < len(h) && b.Len() < 255; i++ {
		c := h[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '.', c == '-', c == '_', c == ':', c == '[', c == ']':
			b.WriteByte(c)
		default:
			b.WriteByte('?')
		}
	}
	if b.Len() == 0 {
		return "unknown"
	}
	return b.String()
}

func sanitizeAddr(a string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '<' || r == '>' {
			return '?'
		}
		return r
	}, a)
}
