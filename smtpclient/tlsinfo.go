package smtpclient

import (
	"crypto/tls"
	"strings"
)

// tlsVersion names the session's protection as logs and events show it:
// "TLSv1.3", or "none" for plain text.
func (s *session) tlsVersion() string {
	tc, ok := s.conn.(*tls.Conn)
	if !ok {
		return "none"
	}
	return strings.Replace(tls.VersionName(tc.ConnectionState().Version), "TLS 1.", "TLSv1.", 1)
}
