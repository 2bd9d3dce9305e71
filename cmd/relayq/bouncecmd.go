package main

// `relayq queue bounce --domain D`: bounce every waiting recipient at a
// domain now, like KumoMTA's kcli bounce; counted first, done with --yes.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/relayq/relayq/internal/admin"
)

var bounceHelp = helpOnly("bounce", "queue bounce --domain D [--reason TEXT] [--wait D] [--dry-run] [--yes]",
	"Bounce now every waiting recipient at domain D (queued, deferred, scheduled or held), like KumoMTA's kcli bounce: each sender gets one report per message, as for relayq's own bounces (NOTIFY honoured), and the events say bounced by operator with \"5.0.0 bounced by operator\" (and the reason). Other recipients of the same messages are untouched. The command first prints how many recipients and messages it would bounce; --yes bounces them, --dry-run only counts. A recipient whose attempt is under way is never bounced while it may still be delivered: the bounce waits up to --wait (default 10s, at most 20s) for the attempt to end, then leaves and counts what is still in flight.",
	"  relayq queue bounce --domain example.net                 # count only\n  relayq queue bounce --domain example.net --yes --reason 'domain closed'\n")

// queueBounce runs `relayq queue bounce --domain D`.
func queueBounce(ctx context.Context, c *admin.Client, f *queueFlags, args []string, out io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("queue bounce: takes no arguments, got %q (give the domain with --domain)", strings.Join(args, " "))
	}
	if f.domain == "" {
		return errors.New("queue bounce: --domain D is required, e.g. --domain example.net")
	}
	count := f.dryRun || !f.yes
	res, err := c.Bounce(ctx, admin.BounceRequest{Domain: f.domain, Reason: f.reason, Wait: f.wait.String(), DryRun: count})
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(out, res)
	}
	what := fmt.Sprintf("%d %s of %d %s", res.Recipients, pluralize(res.Recipients, "recipient", "recipients"),
		res.Messages, pluralize(res.Messages, "message", "messages"))
	if !count {
		fmt.Fprintf(out, "%s: bounced %s; each sender gets one report per message\n", res.Domain, what)
		if res.InFlight > 0 {
			fmt.Fprintf(out, "%d %s left: an attempt was still in flight after %s; run the command again once it has ended\n",
				res.InFlight, pluralize(res.InFlight, "recipient", "recipients"), f.wait)
		}
		return nil
	}
	fmt.Fprintf(out, "%s: %s would be bounced:\n", res.Domain, what)
	for _, id := range res.IDs {
		fmt.Fprintln(out, "  "+id)
	}
	if len(res.IDs) < res.Messages {
		fmt.Fprintf(out, "  ... and %d more\n", res.Messages-len(res.IDs))
	}
	if res.InFlight > 0 {
		fmt.Fprintf(out, "%d more %s in flight now: the bounce waits up to %s for %s\n",
			res.InFlight, pluralize(res.InFlight, "recipient is", "recipients are"), f.wait, pluralize(res.InFlight, "its attempt", "their attempts"))
	}
	if !f.dryRun && res.Recipients+res.InFlight > 0 {
		fmt.Fprintln(out, "nothing changed: add --yes to bounce them")
	}
	return nil
}
