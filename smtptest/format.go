package smtptest

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// FormatEvent renders e as one human-readable line (no newline), as
// cmd/fakemx prints it: time, client, stage, argument and reply.
func FormatEvent(e Event) string {
	arg := e.Arg
	if arg == "" {
		arg = "-"
	}
	return fmt.Sprintf("%s %s %-8s %s -> %s", e.Time.Format("2006-01-02T15:04:05.000Z07:00"), e.Client, e.Stage, arg, e.Reply)
}

// Record is the JSON form of an accepted message, one per line in
// cmd/fakemx's --record file. Message is the raw body as a JSON string; bytes
// that are not UTF-8 are replaced with U+FFFD by encoding/json.
type Record struct {
	Time     time.Time `json:"time"`
	Client   string    `json:"client"`
	From     string    `json:"from"`
	To       []string  `json:"to"`
	Size     int64     `json:"size"`
	TLS      bool      `json:"tls"`
	AuthUser string    `json:"auth_user,omitempty"`
	Message  string    `json:"message"`
}

// WriteRecord appends m to w as one JSON line, in a single Write so that
// lines from concurrent writers to an O_APPEND file do not interleave.
func WriteRecord(w io.Writer, m Message) error {
	line, err := json.Marshal(Record{
		Time:     m.Time,
		Client:   m.Client,
		From:     m.From,
		To:       m.To,
		Size:     m.Size,
		TLS:      m.TLS,
		AuthUser: m.AuthUser,
		Message:  string(m.Data),
	})
	if err != nil {
		return fmt.Errorf("smtptest: encode record: %w", err)
	}
	if _, err := w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("smtptest: write record: %w", err)
	}
	return nil
}
