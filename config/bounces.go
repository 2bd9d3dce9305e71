package config

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Bounces configures the return path: relayq's own envelope senders on a
// bounce domain (VERP) and the listener that takes the reports sent to
// them.
type Bounces struct {
	// Domain is the bounce domain; "" leaves MAIL FROM the application's.
	Domain string
	// Listen are the inbound SMTP listeners for Domain (host:port).
	Listen []string
	// SecretFile holds the VERP HMAC key; "" keeps one in the queue file.
	SecretFile string
	// Forward relays every accepted report to the original sender as well.
	Forward bool
	// ComplaintExpire drops complaint entries after this long; 0 keeps them.
	ComplaintExpire time.Duration
	// MaxMessageBytes bounds one inbound report.
	MaxMessageBytes int64
	// FeedbackLoops are the providers' complaint feedback loops: who,
	// besides <>, may send a complaint (RFC 5965 report).
	FeedbackLoops []FeedbackLoop
	// Limits bound the listener (bouncelimits.go).
	Limits BounceLimits
	// ProxyProtocol applies to Listen.
	ProxyProtocol ProxyProtocol
}

// FeedbackLoop is one provider's feedback loop.
type FeedbackLoop struct {
	// Address, if set, is the fixed address of the bounce domain the
	// provider sends its reports to (registered with it); the listener
	// takes it at RCPT. Lower-cased.
	Address string
	// Senders are the envelope senders its reports come from: addresses,
	// or "@domain" for every address of domain. Lower-cased.
	Senders []string
	// ForwardTo, required with Address, receives (with bounces.forward)
	// what reaches Address and names no message of ours: a provider's
	// report is never dropped unread.
	ForwardTo string
}

// MinBounceSecretBytes is the shortest key bounces.secret_file may hold
// (returnpath/verp's MinKeyBytes: 128 bits).
const MinBounceSecretBytes = 16

func (l *loader) bounces() Bounces {
	return Bounces{
		Domain:          strings.ToLower(strings.TrimSuffix(strings.TrimSpace(l.str("bounces.domain")), ".")),
		Listen:          l.strList("bounces.listen"),
		SecretFile:      strings.TrimSpace(l.str("bounces.secret_file")),
		Forward:         l.boolean("bounces.forward"),
		ComplaintExpire: l.duration("bounces.complaint_expire"),
		MaxMessageBytes: l.integer("bounces.max_message_bytes"),
		FeedbackLoops:   l.feedbackLoops(),
		Limits:          l.bounceLimits(),
		ProxyProtocol:   ProxyProtocol{Trusted: l.prefixes("bounces.proxy_protocol.trusted")},
	}
}

func (l *loader) feedbackLoops() []FeedbackLoop {
	out := []FeedbackLoop{}
	for _, e := range l.entries("bounces.feedback_loops", "feedback loop", []string{"address", "senders", "forward_to"}) {
		fl := FeedbackLoop{Address: strings.ToLower(strings.TrimSpace(e.str("address"))), Senders: []string{},
			ForwardTo: strings.TrimSpace(e.str("forward_to"))}
		list, ok := e.m["senders"].([]any)
		if !ok || len(list) == 0 {
			e.fail("senders", "%s is not a list of addresses or @domains (at least one: whom its reports come from)", describe(e.m["senders"]))
		}
		for i, v := range list {
			s, _ := v.(string)
			s = strings.ToLower(strings.TrimSpace(s))
			local, domain, found := strings.Cut(s, "@")
			if !found || !validHostname(domain) || strings.ContainsAny(local, " <>@") || local == "" && s[0] != '@' {
				e.fail(fmt.Sprintf("senders[%d]", i), "%s is not an address or @domain", describe(v))
				continue
			}
			fl.Senders = append(fl.Senders, s)
		}
		out = append(out, fl)
	}
	return out
}

func (l *loader) validateBounces(b *Bounces) {
	if b.Domain != "" && !validHostname(b.Domain) {
		l.failf("bounces.domain", "%q is not a domain name (letters, digits, '-' and '.')", b.Domain)
	}
	for i, a := range b.Listen {
		l.listenAddr("bounces.listen", fmt.Sprintf("[%d]", i), a)
	}
	if len(b.Listen) > 0 && b.Domain == "" {
		l.failf("bounces.listen", "set, but bounces.domain is empty: the listener would take mail for no address")
	}
	if b.SecretFile != "" {
		key, err := os.ReadFile(b.SecretFile)
		switch {
		case err != nil:
			l.failf("bounces.secret_file", "%w", err)
		case len(strings.TrimSpace(string(key))) < MinBounceSecretBytes:
			l.failf("bounces.secret_file", "%s holds %d bytes, at least %d needed (e.g. head -c 32 /dev/urandom | base64 > FILE)",
				b.SecretFile, len(strings.TrimSpace(string(key))), MinBounceSecretBytes)
		}
	}
	if b.ComplaintExpire < 0 {
		l.failf("bounces.complaint_expire", "%v is negative (0 keeps complaints suppressed)", b.ComplaintExpire)
	}
	l.atLeast("bounces.max_message_bytes", b.MaxMessageBytes, 1024)
	for i, fl := range b.FeedbackLoops {
		if fl.Address == "" {
			continue
		}
		local, domain, _ := strings.Cut(fl.Address, "@")
		switch {
		case local == "" || strings.ContainsAny(local, " <>@") || domain != b.Domain:
			l.failAt("bounces.feedback_loops", fmt.Sprintf("[%d].address", i), "%q is not an address of bounces.domain (%q): the listener takes mail for that domain only", fl.Address, b.Domain)
		case strings.HasPrefix(local, "rq-") || local == "postmaster":
			l.failAt("bounces.feedback_loops", fmt.Sprintf("[%d].address", i), "%q: rq-... and postmaster are the listener's own local parts", fl.Address)
		}
		l.validateForwardTo(i, fl, b.Domain)
	}
	l.validateBounceLimits(&b.Limits)
}

// validateForwardTo checks a loop's forward_to: required with an address
// (what cannot be attributed goes there), and not of the bounce domain,
// where it would come back to the listener.
func (l *loader) validateForwardTo(i int, fl FeedbackLoop, bounceDomain string) {
	key := fmt.Sprintf("[%d].forward_to", i)
	local, domain, found := strings.Cut(fl.ForwardTo, "@")
	switch {
	case fl.ForwardTo == "":
		l.failAt("bounces.feedback_loops", key, "missing: with an address, reports that name no message of ours are forwarded there (an operator's mailbox)")
	case !found || local == "" || strings.ContainsAny(local, " <>@") || !validHostname(domain):
		l.failAt("bounces.feedback_loops", key, "%q is not an address", fl.ForwardTo)
	case strings.EqualFold(strings.TrimSuffix(domain, "."), bounceDomain):
		l.failAt("bounces.feedback_loops", key, "%q is of bounces.domain: forwarded there it would come back to the listener", fl.ForwardTo)
	}
}
