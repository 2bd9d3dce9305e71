package preflight

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/identity"
)

// Mode is what a check does when it fails.
type Mode uint8

const (
	Off Mode = iota
	Warn
	Refuse
	// Add (one_click only) writes relayq's own one-click fields into a
	// message that has none.
	Add
)

// ParseMode reads a configured mode ("" is off).
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "off":
		return Off, nil
	case "warn":
		return Warn, nil
	case "refuse":
		return Refuse, nil
	case "add":
		return Add, nil
	}
	return Off, fmt.Errorf("preflight: %q is not off, warn, refuse or add", s)
}

// Checks are one stream's modes.
type Checks struct {
	DKIMAlignment, DMARC, OneClick Mode
}

func (c Checks) any() bool { return c != Checks{} }

// The checks' names, as configured and as reported.
const (
	CheckDKIM     = "dkim_alignment"
	CheckDMARC    = "dmarc"
	CheckOneClick = "one_click"
)

// Linker makes the one-click link relayq writes for a message and
// recipient (internal/unsubscribe's Signer).
type Linker interface {
	Link(sender identity.Sender, queueID, recipient string) (string, error)
}

// Options configure a Checker.
type Options struct {
	// Streams are the checks per stream name; a stream not listed has none.
	Streams map[string]Checks
	// KeyDomains are the domains of the DKIM keys relayq signs with.
	KeyDomains []string
	// BounceDomain is the VERP domain of the return path, "" when the
	// envelope sender is the application's.
	BounceDomain string
	// DNS looks up DMARC records; nil turns the DMARC check off.
	DNS TXTResolver
	// Links makes relayq's own one-click links; nil, add cannot.
	Links Linker
	// Timeout bounds the first lookup of a domain (default 2 s).
	Timeout time.Duration
	Clock   clock.Clock
}

// Checker runs the checks; safe for concurrent use. Replace it (not
// edit it) on reload; its DMARC cache can be carried over with Keep.
type Checker struct {
	o     Options
	keys  atomic.Pointer[map[string]bool]
	dmarc *dmarcCache
}

// New returns a Checker for o.
func New(o Options) *Checker {
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	c := &Checker{o: o}
	c.SetKeyDomains(o.KeyDomains)
	if o.DNS != nil {
		c.dmarc = &dmarcCache{dns: o.DNS, now: o.Clock.Now, timeout: o.Timeout,
			m: map[string]*dmarcEntry{}, inflight: map[string]chan struct{}{}}
	}
	return c
}

// SetKeyDomains replaces the DKIM key domains (a reload rotated keys).
func (c *Checker) SetKeyDomains(domains []string) {
	keys := map[string]bool{}
	for _, d := range domains {
		keys[normal(d)] = true
	}
	c.keys.Store(&keys)
}

// Wait waits for background refreshes of stale records (tests, shutdown).
func (c *Checker) Wait() {
	if c.dmarc != nil {
		c.dmarc.wg.Wait()
	}
}

// Active reports whether stream has any check, so the caller can skip
// the header scan otherwise.
func (c *Checker) Active(stream string) bool { return c != nil && c.o.Streams[stream].any() }

// Message is what the checks see of a message at the end of its header
// section.
type Message struct {
	Sender     identity.Sender
	QueueID    string
	MailFrom   string
	Recipients []string
	// Header is the header section as the client sent it.
	Header []byte
}

// Finding is one failed check: its name, the enhanced status code of a
// refusal, and what is wrong and how to fix it.
type Finding struct {
	Check string
	Code  [3]int
	Text  string
}

// Verdict is the checks' answer: fields to add to the header section, the
// warnings to report with the message, and the refusal, if any (the first
// failed check whose mode is refuse).
type Verdict struct {
	Add      []byte
	Warnings []Finding
	Refusal  *Finding
}

func (v *Verdict) note(m Mode, f Finding) {
	switch {
	case m == Refuse && v.Refusal == nil:
		v.Refusal = &f
	case m != Off:
		v.Warnings = append(v.Warnings, f)
	}
}

// Check runs the stream's checks on m.
func (c *Checker) Check(m Message) Verdict {
	var v Verdict
	if !c.Active(m.Sender.Stream) {
		return v
	}
	ch := c.o.Streams[m.Sender.Stream]
	f := readFields(m.Header)
	if ch.DKIMAlignment != Off || ch.DMARC != Off {
		c.authChecks(ch, f, m, &v)
	}
	if ch.OneClick != Off {
		c.oneClick(ch.OneClick, f, m, &v)
	}
	return v
}

// authChecks runs the DKIM alignment and DMARC checks on every From:
// domain.
func (c *Checker) authChecks(ch Checks, f fields, m Message, v *Verdict) {
	domains := fromDomains(f.from)
	if len(domains) == 0 {
		v.note(max(ch.DKIMAlignment, ch.DMARC), Finding{Check: CheckDKIM, Code: [3]int{5, 7, 22},
			Text: "preflight dkim_alignment: the message has no From: address to align a signature with; add a From: field"})
		return
	}
	for _, d := range domains {
		var pol Policy
		var dm *dmarcEntry
		if ch.DMARC != Off && c.dmarc != nil {
			e := c.dmarc.get(d)
			dm, pol = &e, e.policy
		}
		key := signingDomain(*c.keys.Load(), d)
		dkimOK := key != "" && Aligned(d, key, pol.StrictDKIM)
		if ch.DKIMAlignment != Off && !dkimOK {
			v.note(ch.DKIMAlignment, dkimFinding(d, key))
		}
		if dm != nil {
			c.dmarcFinding(ch.DMARC, d, *dm, dkimOK, m.MailFrom, v)
		}
	}
}

func dkimFinding(from, key string) Finding {
	org, _ := OrgDomain(from)
	if org == "" {
		org = from
	}
	text := fmt.Sprintf("preflight dkim_alignment: From: domain %s has no DKIM key here; add a dkim.keys entry for %s or %s and publish its record", from, from, org)
	if key != "" {
		text = fmt.Sprintf("preflight dkim_alignment: From: domain %s would be signed as %s, which does not align (RFC 7489 section 3.1.1); add a dkim.keys entry for %s or %s", from, key, from, org)
	}
	return Finding{Check: CheckDKIM, Code: [3]int{5, 7, 22}, Text: text}
}

// dmarcFinding reports a domain without a DMARC record, or whose mail
// would fail it (neither DKIM nor the return path aligned); DNS trouble
// only ever warns.
func (c *Checker) dmarcFinding(mode Mode, from string, e dmarcEntry, dkimOK bool, mailFrom string, v *Verdict) {
	switch e.state {
	case dmarcTrouble:
		v.note(min(mode, Warn), Finding{Check: CheckDMARC, Code: [3]int{4, 7, 26},
			Text: "preflight dmarc: the DMARC record of " + from + " could not be looked up (" + e.err + "); not refused for DNS trouble"})
	case dmarcAbsent:
		v.note(mode, Finding{Check: CheckDMARC, Code: [3]int{5, 7, 26},
			Text: "preflight dmarc: " + from + " publishes no DMARC record; publish one at _dmarc." + from + " (at least \"v=DMARC1; p=none\")"})
	case dmarcFound:
		rp := c.o.BounceDomain
		if rp == "" {
			_, rp, _ = cutAt(mailFrom)
		}
		if !dkimOK && !Aligned(from, rp, e.policy.StrictSPF) {
			v.note(mode, Finding{Check: CheckDMARC, Code: [3]int{5, 7, 26},
				Text: "preflight dmarc: mail from " + from + " would fail its DMARC policy: no aligned DKIM key and the return path (" + rp + ") does not align; add a DKIM key for " + from})
		}
	}
}

// oneClick checks RFC 8058's fields, or adds relayq's own.
func (c *Checker) oneClick(mode Mode, f fields, m Message, v *Verdict) {
	if f.oneClick() {
		return
	}
	fail := Finding{Check: CheckOneClick, Code: [3]int{5, 7, 0},
		Text: "preflight one_click: bulk mail needs List-Unsubscribe with an https URI and List-Unsubscribe-Post: List-Unsubscribe=One-Click (RFC 8058); add both fields"}
	if mode != Add {
		v.note(mode, fail)
		return
	}
	switch {
	case f.hasUnsub || f.hasPost:
		fail.Text = "preflight one_click: the message's own List-Unsubscribe fields are not one-click (RFC 8058: an https URI and List-Unsubscribe-Post: List-Unsubscribe=One-Click); fix them, or remove them and relayq adds its own"
		v.note(Refuse, fail)
	case len(m.Recipients) != 1 || c.o.Links == nil:
		fail.Text = "preflight one_click: relayq's unsubscribe link names one recipient, so this stream takes one recipient per message; send one message per recipient"
		v.note(Refuse, fail)
	default:
		link, err := c.o.Links.Link(m.Sender, m.QueueID, m.Recipients[0])
		if err != nil {
			fail.Text = "preflight one_click: " + err.Error()
			v.note(Refuse, fail)
			return
		}
		v.Add = []byte("List-Unsubscribe: <" + link + ">\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n")
	}
}

// Names lists the findings' check names, comma-separated (an event field).
func Names(fs []Finding) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Check
	}
	return strings.Join(names, ",")
}
