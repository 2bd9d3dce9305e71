package smtptest

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// hasAttachment is the one value of has= so far.
const hasAttachment = "attachment"

// filter selects messages by the query parameters to, from, subject, text
// (each a case-insensitive substring; text searches the decoded text and
// HTML parts), since (an RFC 3339 time), has=attachment, after (an ID),
// client (the client's IP, or "ip:port") and helo (the HELO/EHLO name,
// case-insensitive, whole).
type filter struct {
	to, from, subject, text string
	client, helo            string
	since                   time.Time
	after                   int
	attachment              bool
}

// parseFilter reads a filter from a query that strictQuery has checked.
func parseFilter(q url.Values) (filter, error) {
	f := filter{to: q.Get(paramTo), from: q.Get(paramFrom), subject: q.Get(paramSubject), text: q.Get(paramText),
		client: q.Get(paramClient), helo: q.Get(paramHelo)}
	if v := q.Get(paramSince); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return f, fmt.Errorf("since=%q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", v)
		}
		f.since = t
	}
	if v := q.Get(paramAfter); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return f, fmt.Errorf("after=%q: want a message ID", v)
		}
		f.after = n
	}
	switch v := q.Get(paramHas); v {
	case "":
	case hasAttachment:
		f.attachment = true
	default:
		return f, fmt.Errorf("has=%q: want has=%s", v, hasAttachment)
	}
	return f, nil
}

// any reports whether f selects anything less than every message.
func (f filter) any() bool { return f != (filter{}) }

func (f filter) match(m Message) bool {
	if id, _ := strconv.Atoi(m.ID); id <= f.after {
		return false
	}
	if !f.since.IsZero() && m.Time.Before(f.since) {
		return false
	}
	if f.client != "" && m.Client != f.client && hostOf(m.Client) != f.client {
		return false
	}
	if f.helo != "" && !strings.EqualFold(m.Helo, f.helo) {
		return false
	}
	if f.from != "" && !containsFold(m.From, f.from) {
		return false
	}
	if f.to != "" && !slices.ContainsFunc(m.To, func(to string) bool { return containsFold(to, f.to) }) {
		return false
	}
	if f.subject != "" && !containsFold(subjectOf(m.Data), f.subject) {
		return false
	}
	if f.text == "" && !f.attachment {
		return true
	}
	p, _ := parseMIME(m.Data) // what was read of a broken message is searched
	if f.text != "" && !containsFold(p.Text, f.text) && !containsFold(p.HTML, f.text) {
		return false
	}
	return !f.attachment || len(p.Attachments) > 0
}
