package sendmail

import (
	"strings"

	"github.com/relayq/relayq/internal/rawmsg"
)

// qualify completes a bare local part ("root") to root@hostname, as
// Postfix's sendmail does with append_at_myorigin and its default myorigin
// = myhostname: cron (`sendmail -t -f root`, "To: root"), at and many
// scripts name local users only, and RFC 5321 section 4.1.2 allows no path
// without a domain, so the relay would refuse them. The relay's full
// hostname is used, not its parent domain, because that is the one name
// relayq knows to be this machine's. "" (the null sender) and addresses
// with an "@" are returned as they are.
func qualify(addr, hostname string) string {
	if addr == "" || strings.Contains(addr, "@") {
		return addr
	}
	return addr + "@" + hostname
}

// headerRecipients is the To, Cc and Bcc addresses of h, whose bare local
// parts qualifyHeader has completed.
func headerRecipients(h *rawmsg.Header) ([]string, error) {
	var out []string
	for _, name := range []string{"To", "Cc", "Bcc"} {
		list, err := h.Addresses(name)
		if err != nil {
			return nil, err
		}
		out = append(out, list...)
	}
	return out, nil
}
