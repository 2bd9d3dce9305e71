package sendmail

import (
	"fmt"
	"strings"

	"github.com/emersion/go-message/mail"

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

// headerRecipients is the To, Cc and Bcc addresses of h, bare local parts
// qualified with hostname. A field that names a local part alone ("To:
// root", "To: Ops <ops>") is one the full address parser refuses, so such
// fields are qualified item by item first.
func headerRecipients(h *rawmsg.Header, hostname string) ([]string, error) {
	var out []string
	for _, name := range []string{"To", "Cc", "Bcc"} {
		list, err := h.Addresses(name)
		if err == nil {
			out = append(out, list...)
			continue
		}
		for _, f := range h.Fields {
			if !strings.EqualFold(f.Name, name) {
				continue
			}
			q, qerr := qualifyField(string(f.Value()), hostname)
			if qerr != nil {
				return nil, err
			}
			out = append(out, q...)
		}
	}
	return out, nil
}

// qualifyField parses one address field's value whose items may be bare
// local parts, plain or in angle brackets; a display name may not hold a
// comma there (the fields cron and scripts write have none).
func qualifyField(v, hostname string) ([]string, error) {
	v = strings.TrimSpace(strings.ReplaceAll(v, "\r\n", ""))
	var out []string
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if lt := strings.LastIndexByte(item, '<'); lt >= 0 && strings.HasSuffix(item, ">") {
			item = item[:lt+1] + qualify(item[lt+1:len(item)-1], hostname) + ">"
		} else {
			item = qualify(item, hostname)
		}
		a, err := mail.ParseAddress(item)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		out = append(out, a.Address)
	}
	return out, nil
}
