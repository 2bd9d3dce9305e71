package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// Exit statuses of fakemx expect: the expectation held, it did not, or the
// command line or the API was wrong (so a CI step cannot mistake a typo for
// a failed delivery, or the other way round).
const (
	expectOK     = 0
	expectFailed = 1
	expectUsage  = 2
)

// expectation is the command line of fakemx expect, parsed.
type expectation struct {
	api          string
	filters      url.Values // to, from, subject, text: the message that must arrive
	within       time.Duration
	noMessageTo  string
	attemptsMost int // -1: not checked
}

const expectUsageText = `usage: fakemx expect --api URL [--to ADDR] [--from ADDR] [--subject TEXT] [--text TEXT]
                     [--client IP] [--helo NAME]
                     [--within 10s] [--attempts-at-most N] [--no-message-to ADDR]

Exits 0 when a message matching every filter arrived within the time (and
prints it as JSON), 1 otherwise (and lists what did arrive), 2 on a bad
command line or an API error. --no-message-to alone waits the whole time.

`

func parseExpect(args []string, stderr io.Writer) (expectation, error) {
	e := expectation{filters: url.Values{}}
	fs := flag.NewFlagSet("fakemx expect", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&e.api, "api", "", "fakemx's HTTP address, e.g. http://127.0.0.1:8026 (required)")
	for _, name := range []string{"to", "from", "subject", "text", "client", "helo"} {
		help := "the message must have this " + name + " (case-insensitive substring)"
		switch name {
		case "client":
			help = "the message must come from this client IP (the relay's source address)"
		case "helo":
			help = "the client must have said this HELO/EHLO name (whole, case-insensitive)"
		}
		fs.Func(name, help, func(v string) error {
			if v == "" {
				return fmt.Errorf("--%s is empty", name)
			}
			e.filters.Set(name, v)
			return nil
		})
	}
	fs.DurationVar(&e.within, "within", 10*time.Second, "how long to wait for the message")
	fs.IntVar(&e.attemptsMost, "attempts-at-most", -1, "fail if the --to recipient took more than N RCPT attempts")
	fs.StringVar(&e.noMessageTo, "no-message-to", "", "fail if a message to this address arrived")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, expectUsageText)
			fs.SetOutput(stderr)
			fs.PrintDefaults()
		}
		return e, err
	}
	switch {
	case fs.NArg() > 0:
		return e, fmt.Errorf("unexpected arguments: %q", fs.Args())
	case e.api == "":
		return e, errors.New("--api is required, e.g. --api http://127.0.0.1:8026")
	case len(e.filters) == 0 && e.noMessageTo == "":
		return e, errors.New("nothing to expect: give --to, --from, --subject, --text, --client, --helo or --no-message-to")
	case e.attemptsMost >= 0 && e.filters.Get("to") == "":
		return e, errors.New("--attempts-at-most counts the --to recipient's attempts: give --to")
	case e.within < 0 || e.within > 10*time.Minute:
		return e, errors.New("--within must be from 0s to 10m")
	}
	e.api = strings.TrimRight(e.api, "/") + "/api/v1"
	return e, nil
}

// runExpect is `fakemx expect`.
func runExpect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e, err := parseExpect(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return expectOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "fakemx expect: %v\n", err)
		return expectUsage
	}
	ok, why, err := e.check(ctx, stdout)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "fakemx expect: %v\n", err)
		return expectUsage
	case !ok:
		fmt.Fprintf(stderr, "fakemx expect: FAILED: %s\n", why)
		e.listArrived(ctx, stderr)
		return expectFailed
	}
	fmt.Fprintf(stderr, "fakemx expect: ok: %s\n", why)
	return expectOK
}

// check runs the expectations in order: the message, its attempts, the
// absence of another.
func (e expectation) check(ctx context.Context, stdout io.Writer) (ok bool, why string, err error) {
	why = "no message was expected to arrive"
	if len(e.filters) > 0 {
		q := cloneValues(e.filters)
		q.Set("timeout", e.within.String())
		var m smtptest.MessageDetail
		status, err := e.get(ctx, "/messages/wait", q, &m)
		if err != nil {
			return false, "", err
		}
		if status == http.StatusRequestTimeout {
			return false, fmt.Sprintf("no message with %s within %v", describe(e.filters), e.within), nil
		}
		out, _ := json.MarshalIndent(m, "", "  ")
		fmt.Fprintf(stdout, "%s\n", out)
		why = fmt.Sprintf("message %s from <%s> to %s, subject %q, sent by %s (EHLO %s)", m.ID, m.From, strings.Join(m.To, ", "), m.Subject, m.Client, m.Helo)
	}
	if e.attemptsMost >= 0 {
		n, err := e.rcptAttempts(ctx, e.filters.Get("to"))
		if err != nil {
			return false, "", err
		}
		if n > e.attemptsMost {
			return false, fmt.Sprintf("%s took %d RCPT attempts, more than %d", e.filters.Get("to"), n, e.attemptsMost), nil
		}
		why += fmt.Sprintf("; %d RCPT attempts", n)
	}
	if e.noMessageTo != "" {
		found, err := e.anyMessageTo(ctx, len(e.filters) == 0)
		if err != nil {
			return false, "", err
		}
		if found != "" {
			return false, fmt.Sprintf("message %s to %s arrived", found, e.noMessageTo), nil
		}
		why += "; nothing to " + e.noMessageTo
	}
	return true, why, nil
}

// anyMessageTo returns the ID of a message to e.noMessageTo, waiting for
// one the whole time when wait is set (the absence is the whole test).
func (e expectation) anyMessageTo(ctx context.Context, wait bool) (string, error) {
	q := url.Values{"to": {e.noMessageTo}}
	if wait {
		q.Set("timeout", e.within.String())
		var m smtptest.MessageSummary
		status, err := e.get(ctx, "/messages/wait", q, &m)
		if err != nil || status == http.StatusRequestTimeout {
			return "", err
		}
		return m.ID, nil
	}
	var list struct{ Messages []smtptest.MessageSummary }
	if _, err := e.get(ctx, "/messages", q, &list); err != nil || len(list.Messages) == 0 {
		return "", err
	}
	return list.Messages[0].ID, nil
}

// rcptAttempts counts the RCPT commands for rcpt the server answered.
func (e expectation) rcptAttempts(ctx context.Context, rcpt string) (int, error) {
	var got struct{ Attempts []smtptest.AttemptRecord }
	if _, err := e.get(ctx, "/attempts", url.Values{"rcpt": {rcpt}}, &got); err != nil {
		return 0, err
	}
	n := 0
	for _, a := range got.Attempts {
		if a.Stage == smtptest.StageRcpt {
			n++
		}
	}
	return n, nil
}

// listArrived prints what did arrive, newest first, to explain a failure.
func (e expectation) listArrived(ctx context.Context, w io.Writer) {
	var list struct{ Messages []smtptest.MessageSummary }
	if _, err := e.get(ctx, "/messages", url.Values{"limit": {"20"}}, &list); err != nil {
		fmt.Fprintf(w, "  (could not list messages: %v)\n", err)
		return
	}
	if len(list.Messages) == 0 {
		fmt.Fprintln(w, "  no message arrived at all")
		return
	}
	fmt.Fprintln(w, "  what arrived, newest first:")
	for _, m := range list.Messages {
		fmt.Fprintf(w, "  %s  %s  <%s> -> %s  %q  from %s (EHLO %s)\n", m.ID, m.Time.Format(time.RFC3339), m.From, strings.Join(m.To, ", "), m.Subject, m.Client, m.Helo)
	}
}

// get GETs path with q and decodes a 200 into v; 408 is returned as a
// status, any other answer is an error quoting the API's own message.
func (e expectation) get(ctx context.Context, path string, q url.Values, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", e.api+path+"?"+q.Encode(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("API: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return resp.StatusCode, json.NewDecoder(resp.Body).Decode(v)
	case http.StatusRequestTimeout:
		return resp.StatusCode, nil
	}
	var apiErr struct{ Error string }
	json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&apiErr)
	return resp.StatusCode, fmt.Errorf("API %s: %s: %s", path, resp.Status, apiErr.Error)
}

func describe(q url.Values) string {
	var parts []string
	for _, k := range []string{"to", "from", "subject", "text", "client", "helo"} {
		if v := q.Get(k); v != "" {
			parts = append(parts, fmt.Sprintf("%s %q", k, v))
		}
	}
	return strings.Join(parts, ", ")
}

func cloneValues(q url.Values) url.Values {
	c := url.Values{}
	for k, v := range q {
		c[k] = append([]string(nil), v...)
	}
	return c
}
