package redact

import (
	"net/url"
	"strings"
)

// URL returns raw without its userinfo, query and fragment: what names the
// endpoint, never what authenticates to it.
func URL(raw string) string {
	raw, _, _ = strings.Cut(raw, "#")
	raw, _, _ = strings.Cut(raw, "?")
	if scheme, rest, ok := strings.Cut(raw, "://"); ok {
		// The authority ends at the first '/'; an '@' before it ends the
		// userinfo (a password may itself hold '@', hence the last one).
		end := strings.IndexByte(rest+"/", '/')
		if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
			rest = rest[at+1:]
		}
		raw = scheme + "://" + rest
	}
	return raw
}

// Error returns err with its URL redacted when it is a *url.Error, else
// err unchanged. net/http puts the request URL in the errors of
// Client.Do (hiding only the password, never the query), and url.Parse
// the whole text it refused. Call it on the error as returned, before
// wrapping it: fmt.Errorf formats the message at once.
func Error(err error) error {
	ue, ok := err.(*url.Error)
	if !ok {
		return err
	}
	c := *ue
	c.URL = URL(c.URL)
	return &c
}
