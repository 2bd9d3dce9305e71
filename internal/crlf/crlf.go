// Package crlf checks SMTP line endings fast. RFC 5321 section 2.3.8 allows
// CR and LF only together as CRLF; a bare CR or LF is what SMTP smuggling
// (CVE-2023-51764) relies on, so relayq refuses them on the way in and
// never sends them on the way out.
//
// Message bodies are checked in pieces as they stream by; a piece may end
// in the CR of a CRLF whose LF starts the next piece, so the check carries
// that one bit of state.
package crlf

import "bytes"

// Clean reports whether p contains CR and LF only as CRLF pairs, given
// whether the byte before p was a CR still waiting for its LF (pendingCR).
// A CR at the very end of p is allowed; endsCR reports it, to pass to the
// next call. At the end of a message a pending CR is a bare CR.
//
// It counts with the SIMD-backed bytes functions instead of looking at
// every byte in Go: each LF must follow a CR, and then equal counts mean no
// CR is left without its LF.
func Clean(p []byte, pendingCR bool) (ok, endsCR bool) {
	if len(p) == 0 {
		return true, pendingCR
	}
	lfs := bytes.Count(p, lf)
	crs := bytes.Count(p, cr)
	paired := lfs // CRs in p that an LF in p follows
	if pendingCR {
		if p[0] != '\n' {
			return false, false
		}
		paired--
	}
	endsCR = p[len(p)-1] == '\r'
	unpaired := 0
	if endsCR {
		unpaired = 1
	}
	if crs != paired+unpaired {
		return false, false
	}
	for i, off := bytes.IndexByte(p, '\n'), 0; i >= 0; i = bytes.IndexByte(p[off:], '\n') {
		at := off + i
		if at == 0 {
			if !pendingCR {
				return false, false
			}
		} else if p[at-1] != '\r' {
			return false, false
		}
		off = at + 1
	}
	return true, endsCR
}

var (
	cr = []byte{'\r'}
	lf = []byte{'\n'}
)
