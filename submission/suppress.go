package submission

import (
	"io"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/queue"
)

// suppressed refuses a recipient on the suppression list with 550 5.1.1
// and records a suppressed event; nil lets it through. A list that cannot
// be read lets mail through: the list must never lose mail. SMTP and HTTP
// submission both pass here (CheckRecipient).
func (a Acceptor) suppressed(c Client, from, to string) error {
	sp := a.s.opts.Suppressions
	if sp == nil {
		return nil
	}
	tenant, _ := a.tenantOf(c.Credential)
	text, refused, err := sp.Refuse(identity.Sender{Tenant: tenant, Credential: c.Credential}, to, c.Credential.Authenticated(), a.Trusted(c.IP))
	if err != nil {
		a.s.log.Warn("suppression list unreadable; recipient accepted", "to", to, "err", err)
		return nil
	}
	if !refused {
		return nil
	}
	reply := &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: text}
	ev := queue.Event{Type: queue.EventSuppressed, From: from, Recipient: to, Reply: "550 5.1.1 " + text, Tenant: tenant}
	if err := a.s.opts.Queue.Events().Add(ev); err != nil {
		a.s.log.Error("recording a suppressed event failed", "to", to, "err", err)
	}
	return a.reject(c, RejectSuppressed, reply, "to", to)
}

// headerScan wraps out with the scanner of the header section; it adds
// missing Message-ID and Date only for authenticated and trusted clients,
// and only when configured.
func (a Acceptor) headerScan(c Client, out io.Writer, id string, now time.Time) *headerScan {
	hs := &headerScan{w: out, stripKey: a.s.opts.IdempotencyWindow > 0}
	if a.s.opts.AddMissingHeaders && a.MayRelay(c) {
		host := a.s.opts.Hostname
		hs.add = func() (string, time.Time) { return "<" + id + "@" + host + ">", now }
	}
	return hs
}
