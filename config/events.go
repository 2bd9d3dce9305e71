package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/redact"
)

// Events configures the durable event stream and its webhooks.
type Events struct {
	// Retention is how long events and finished messages stay queryable.
	Retention time.Duration
	Webhooks  []Webhook
}

// Webhook is one endpoint the event stream is posted to.
type Webhook struct {
	URL    string
	Secret string
	// Types are event type names; empty means all.
	Types []string
	// Batch is the most events per POST.
	Batch int
	// Tenant, if set, limits the webhook to that tenant's events.
	Tenant string
}

// Suppression configures the suppression list.
type Suppression struct {
	// Auto adds recipients whose bounce says they do not exist (5.1.x),
	// or whose status is listed in Codes.
	Auto   bool
	Expire time.Duration
	// DomainExpire bounds the entries a 5.1.2 bounce added (the domain does
	// not resolve or has no mail server): such a domain often resolves
	// again tomorrow. 0 leaves them to Expire.
	DomainExpire time.Duration
	Codes        []string
	// ExemptAuthenticated and ExemptTrusted let SASL-authenticated clients
	// and trusted networks send to suppressed addresses.
	ExemptAuthenticated bool
	ExemptTrusted       bool
}

// eventTypes are the names GET /api/v1/events and webhooks know: those of
// queue.EventTypes, in its order (events_test.go checks; config does not
// import queue).
var eventTypes = []string{"queued", "delivered", "deferred", "bounced", "expired", "delayed", "suppressed", "dsn_sent", "scheduled", "complained", "auto_replied", "deleted", "held", "released", "unsubscribed", "tenant_state"}

func (l *loader) events() Events {
	ev := Events{Retention: l.duration("events.retention"), Webhooks: []Webhook{}}
	for _, e := range l.entries("events.webhooks", "webhook", []string{"url", "secret", "types", "batch", "tenant"}) {
		w := Webhook{URL: strings.TrimSpace(e.str("url")), Secret: e.str("secret"), Batch: e.positive("batch"), Types: []string{}, Tenant: strings.TrimSpace(e.str("tenant"))}
		switch x := e.m["types"].(type) {
		case nil:
		case []any:
			for i, t := range x {
				s, ok := t.(string)
				if !ok || !slices.Contains(eventTypes, s) {
					e.fail(fmt.Sprintf("types[%d]", i), "%s is not an event type (%s)", describe(t), strings.Join(eventTypes, ", "))
					continue
				}
				w.Types = append(w.Types, s)
			}
		default:
			e.fail("types", "%s is not a list of event types", describe(x))
		}
		if w.Batch == 0 {
			w.Batch = 100
		}
		ev.Webhooks = append(ev.Webhooks, w)
	}
	return ev
}

func (l *loader) suppression() Suppression {
	return Suppression{
		Auto:                l.boolean("suppression.auto"),
		Expire:              l.duration("suppression.expire"),
		DomainExpire:        l.duration("suppression.domain_expire"),
		Codes:               l.strList("suppression.codes"),
		ExemptAuthenticated: l.boolean("suppression.exempt_authenticated"),
		ExemptTrusted:       l.boolean("suppression.exempt_trusted"),
	}
}

func (l *loader) validateEvents(ev *Events, sp *Suppression) {
	if ev.Retention <= 0 {
		l.failf("events.retention", "%v: must be positive (events and finished messages are kept this long)", ev.Retention)
	}
	seen := map[string]bool{}
	for i, w := range ev.Webhooks {
		at := fmt.Sprintf("[%d]", i)
		u, err := url.Parse(w.URL)
		switch {
		case w.URL == "":
			l.failAt("events.webhooks", at+".url", "empty")
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			l.failAt("events.webhooks", at+".url", "%q is not an http:// or https:// URL", redact.URL(w.URL))
		case seen[w.URL]:
			l.failAt("events.webhooks", at+".url", "%q is listed twice", redact.URL(w.URL))
		case w.Secret == "":
			l.failAt("events.webhooks", at+".secret", "empty: the receiver could not tell relayq's requests from anyone's")
		}
		seen[w.URL] = true
	}
	if sp.Expire < 0 {
		l.failf("suppression.expire", "%v is negative (0 keeps entries forever)", sp.Expire)
	}
	if sp.DomainExpire < 0 {
		l.failf("suppression.domain_expire", "%v is negative (0 leaves 5.1.2 entries to suppression.expire)", sp.DomainExpire)
	}
	for i, c := range sp.Codes {
		p := strings.Split(c, ".")
		if len(p) != 3 || p[0] != "5" {
			l.failAt("suppression.codes", fmt.Sprintf("[%d]", i), "%q is not a permanent enhanced status code such as 5.7.1", c)
		}
	}
}
