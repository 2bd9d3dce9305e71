package submission

import "strings"

// qualify completes a path without a domain ("root", which go-smtp passes
// on with AllowMailboxWithoutDomain) to root@hostname for a client that
// may relay, as Postfix does with append_at_myorigin and its default
// myorigin = myhostname, and as `relayq sendmail` does: cron (`sendmail
// -t -f root`) and scripts on hosts that relay through relayq name local
// users only. RFC 5321 section 4.1.2 allows no such path, so for anyone
// else it stays as it is and is refused as before (CheckSender,
// CheckRecipient). "" (the null sender) and paths with an "@" are left
// alone; so is "postmaster" (RFC 5321 section 4.1.1.3), which go-smtp
// accepted already.
func (s *session) qualify(path string) string {
	if path == "" || strings.Contains(path, "@") || strings.EqualFold(path, "postmaster") || !s.mayRelay() {
		return path
	}
	return path + "@" + s.srv.opts.Hostname
}
