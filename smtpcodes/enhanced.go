package smtpcodes

import (
	"strconv"
	"strings"
)

// enhanced is an RFC 3463 status code class.subject.detail.
type enhanced struct{ class, subject, detail int }

// parseEnhanced parses "c.sss.ddd" strictly per RFC 3463 §2: class is one
// of 2, 4, 5; subject and detail are 1-3 digits without sign.
func parseEnhanced(s string) (enhanced, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || len(parts[0]) != 1 {
		return enhanced{}, false
	}
	var n [3]int
	for i, p := range parts {
		if len(p) < 1 || len(p) > 3 {
			return enhanced{}, false
		}
		for j := 0; j < len(p); j++ {
			if p[j] < '0' || p[j] > '9' {
				return enhanced{}, false
			}
		}
		n[i], _ = strconv.Atoi(p)
	}
	e := enhanced{n[0], n[1], n[2]}
	if !validClassDigit(e.class) {
		return enhanced{}, false
	}
	return e, true
}

func validClassDigit(c int) bool { return c == 2 || c == 4 || c == 5 }

// valid reports whether e could appear on the wire (go-smtp uses {0,0,0} and
// {-1,-1,-1} for "not set").
func (e enhanced) valid() bool {
	return validClassDigit(e.class) && e.subject >= 0 && e.subject <= 999 && e.detail >= 0 && e.detail <= 999
}

func (e enhanced) String() string {
	return strconv.Itoa(e.class) + "." + strconv.Itoa(e.subject) + "." + strconv.Itoa(e.detail)
}

// withClass rewrites the class digit so that it agrees with c. RFC 3463 §3.1
// requires the class to match the basic reply code; when we deliberately
// treat a 5xx as transient (552 at RCPT, 535 from a smarthost) the enhanced
// code must say 4 too, or a "delayed" DSN would carry a 5.x.x status.
func (e enhanced) withClass(c Class) enhanced {
	e.class = classDigit(c)
	return e
}

func classDigit(c Class) int {
	switch c {
	case Success:
		return 2
	case Permanent:
		return 5
	}
	return 4
}

// normalizeEnhanced validates a caller-supplied enhanced code and forces its
// class digit to agree with c; anything unparseable becomes c.0.0.
func normalizeEnhanced(s string, c Class) string {
	e, ok := parseEnhanced(s)
	if !ok {
		e = enhanced{}
	}
	return e.withClass(c).String()
}
