package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/deliverability"
	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

// The per-provider figures of GET /api/v1/deliverability and the metrics
// match the events they come from, in a run against fakemx personas:
// gmail refuses unknown users (bounced), yahoo defers past its rate
// (deferred), outlook takes everything (delivered).
func TestDeliverabilityFiguresMatchEvents(t *testing.T) {
	gmail := smtptest.NewServer(t, smtptest.Persona("gmail,unknown=nobody@*"))
	yahoo := smtptest.NewServer(t, smtptest.Persona("yahoo,rate=1/h"))
	outlook := smtptest.NewServer(t, smtptest.Persona("outlook"))
	r := startRelay(t, outlook.Addr(), withAdminAPI(), withRoute("gmail.com", gmail.Addr()), withRoute("yahoo.com", yahoo.Addr()),
		withRoute("hotmail.com", outlook.Addr()),
		withRetry("retry:\n  initial_delay: 1h\n  max_delay: 2h\n  max_age: 24h\n"))
	for i, to := range []string{"ann@gmail.com", "nobody@gmail.com", "ben@yahoo.com", "cy@yahoo.com", "dee@hotmail.com", "eve@hotmail.com"} {
		sendAccepted(t, r.addr, "app@shop.example", to, testMessage("tok-d"+string(rune('a'+i))), to)
	}
	want := map[string]deliverability.Counts{
		"gmail":   {Delivered: 1, Bounced: 1},
		"yahoo":   {Delivered: 1, Deferred: 1},
		"outlook": {Delivered: 2},
	}
	// The events first: what the figures must match.
	got := map[string]deliverability.Counts{}
	// The bounce's report to app@shop.example counts too, under "other".
	want["other"] = deliverability.Counts{Delivered: 1}
	waitfor.Until(t, 30*time.Second, "the outcomes in the event stream", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p, err := r.admin.Events(ctx, "", []queue.EventType{queue.EventDelivered, queue.EventDeferred, queue.EventBounced}, 1000, 0)
		if err != nil {
			t.Fatal(err)
		}
		got = map[string]deliverability.Counts{}
		for _, ev := range p.Events {
			c := got[deliverability.ProviderOf(ev.Recipient, "")]
			switch ev.Type {
			case queue.EventDelivered:
				c.Delivered++
			case queue.EventDeferred:
				c.Deferred++
			case queue.EventBounced:
				c.Bounced++
			}
			got[deliverability.ProviderOf(ev.Recipient, "")] = c
		}
		for p, c := range want {
			if got[p] != c {
				return false
			}
		}
		return len(p.Events) == 7
	})
	var answer struct {
		ComplaintLine float64              `json:"complaint_line"`
		Providers     []deliverability.Row `json:"providers"`
	}
	waitfor.Until(t, 30*time.Second, "the figures match the events", func() bool {
		getJSON(t, r.adminURL+"/api/v1/deliverability", &answer)
		figures := map[string]deliverability.Counts{}
		for _, row := range answer.Providers {
			figures[row.Provider] = row.Day
			if row.Hour != row.Day {
				t.Fatalf("%s: hour %+v, day %+v: all of it happened in the last hour", row.Provider, row.Hour, row.Day)
			}
		}
		for p, c := range want {
			if figures[p] != c {
				return false
			}
		}
		return true
	})
	if answer.ComplaintLine != 0.003 {
		t.Errorf("complaint line %v", answer.ComplaintLine)
	}
	resp, err := http.Get(r.adminURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range []string{
		`relayq_deliverability_recipients{outcome="bounced",provider="gmail",stream="default",window="1h"} 1`,
		`relayq_deliverability_recipients{outcome="deferred",provider="yahoo",stream="default",window="24h"} 1`,
		`relayq_deliverability_recipients{outcome="delivered",provider="outlook",stream="default",window="1h"} 2`,
	} {
		if !strings.Contains(string(body), line) {
			t.Errorf("metrics lack %s", line)
		}
	}
}
