package admin

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// timeLayout prints times in UTC with an explicit zone, so output pasted
// from different machines compares directly.
const timeLayout = "2006-01-02 15:04:05Z"

// listHeader labels the two kinds of line in WriteList: a message line,
// then one line per recipient.
const listHeader = "-Queue ID-             --Size-- ----Arrival Time---- -Sender-\n" +
	"  -Status-- -Tries- ----Next Attempt---- -Recipient-\n"

// WriteList prints messages as a table in the manner of Postfix's
// `postqueue -p`: per message its ID ("!" after it when held), size,
// arrival time and sender, then per recipient its status, attempts, next
// attempt and address, with the last reply in parentheses underneath.
// Nothing is printed for an empty slice: the caller says why it is empty.
func WriteList(w io.Writer, msgs []Message) error {
	if len(msgs) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString(listHeader)
	var total int64
	held := false
	for i := range msgs {
		m := &msgs[i]
		total += m.Size
		id := m.ID
		if m.Held {
			id += "!"
			held = true
		}
		fmt.Fprintf(&b, "\n%-22s %8d %-20s %s%s\n", id, m.Size, formatTime(m.Created), sender(m.From), streamOf(m))
		for _, r := range m.Recipients {
			fmt.Fprintf(&b, "  %-9s %7d %-20s %s\n", r.Status, r.Attempts, formatTime(r.NextAttempt), r.Address)
			if r.LastReply != "" {
				fmt.Fprintf(&b, "%41s(%s)\n", "", r.LastReply)
			}
			if r.Backoff != "" {
				fmt.Fprintf(&b, "%41s(%s)\n", "", r.Backoff)
			}
		}
	}
	fmt.Fprintf(&b, "\n-- %s in %d %s.", formatSize(total), len(msgs), plural(len(msgs), "message", "messages"))
	if held {
		b.WriteString(" (! = held)")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMessage prints everything the API says about one message, one
// field per line.
func WriteMessage(w io.Writer, m *Message) error {
	var b strings.Builder
	fmt.Fprintf(&b, "ID:       %s\n", m.ID)
	fmt.Fprintf(&b, "From:     %s\n", sender(m.From))
	fmt.Fprintf(&b, "Arrival:  %s\n", formatTime(m.Created))
	fmt.Fprintf(&b, "Size:     %d bytes\n", m.Size)
	if m.Stream != "" {
		fmt.Fprintf(&b, "Stream:   %s\n", m.Stream)
	}
	if m.Tenant != "" {
		fmt.Fprintf(&b, "Tenant:   %s\n", m.Tenant)
	}
	fmt.Fprintf(&b, "Held:     %s\n", yesNo(m.Held))
	if !m.Release.IsZero() {
		fmt.Fprintf(&b, "Release:  %s\n", formatTime(m.Release))
	}
	b.WriteString("Recipients:\n")
	for _, r := range m.Recipients {
		fmt.Fprintf(&b, "  %s\n", r.Address)
		fmt.Fprintf(&b, "    status:        %s\n", r.Status)
		fmt.Fprintf(&b, "    attempts:      %d\n", r.Attempts)
		if !r.NextAttempt.IsZero() {
			fmt.Fprintf(&b, "    next attempt:  %s\n", formatTime(r.NextAttempt))
		}
		if !r.LastAttempt.IsZero() {
			fmt.Fprintf(&b, "    last attempt:  %s\n", formatTime(r.LastAttempt))
		}
		if r.LastReply != "" {
			fmt.Fprintf(&b, "    last reply:    %s\n", r.LastReply)
		}
		if r.RemoteMTA != "" {
			fmt.Fprintf(&b, "    remote MTA:    %s\n", r.RemoteMTA)
		}
		if r.Backoff != "" {
			fmt.Fprintf(&b, "    destination:   %s\n", r.Backoff)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// sender shows the null reverse path (bounces, RFC 5321 section 4.5.5) as <>.
func sender(from string) string {
	if from == "" {
		return "<>"
	}
	return from
}

// formatTime prints t in UTC, or "-" for no time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

// formatSize prints a byte count the way an operator reads it.
func formatSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// streamOf is the stream a list names after the sender, "  [bulk]", or
// nothing for a message without one.
func streamOf(m *Message) string {
	if m.Stream == "" {
		return ""
	}
	return "  [" + m.Stream + "]"
}
