package smtptest

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
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
	// Type is "message"; refused attempts are AttemptRecords, "attempt".
	Type     string    `json:"type"`
	Time     time.Time `json:"time"`
	Client   string    `json:"client"`
	From     string    `json:"from"`
	To       []string  `json:"to"`
	Size     int64     `json:"size"`
	TLS      bool      `json:"tls"`
	AuthUser string    `json:"auth_user,omitempty"`
	BodyType string    `json:"body_type,omitempty"`
	UTF8     bool      `json:"utf8,omitempty"`
	Message  string    `json:"message"`
}

// WriteRecord appends m to w as one JSON line, in a single Write so that
// lines from concurrent writers to an O_APPEND file do not interleave.
func WriteRecord(w io.Writer, m Message) error {
	line, err := json.Marshal(Record{
		Type:     RecordMessage,
		Time:     m.Time,
		Client:   m.Client,
		From:     m.From,
		To:       m.To,
		Size:     m.Size,
		TLS:      m.TLS,
		AuthUser: m.AuthUser,
		BodyType: m.BodyType,
		UTF8:     m.UTF8,
		Message:  string(m.Data),
	})
	return writeLine(w, line, err)
}

// Record types, the "type" field of each line of a record file.
const (
	RecordMessage = "message"
	RecordAttempt = "attempt"
)

// AttemptRecord is one SMTP command and the reply to it, as
// GET /api/v1/attempts lists them and as a record file holds refused ones.
type AttemptRecord struct {
	Type   string    `json:"type,omitempty"`
	Time   time.Time `json:"time"`
	Client string    `json:"client"`
	Stage  Stage     `json:"stage"`
	// Command is the client's command, e.g. "RCPT TO:<b@example.test>".
	Command string `json:"command"`
	Reply   string `json:"reply"`
	// By is "greylist", "rule", "rate-limit" or "conn-limit" when one of
	// them decided the reply; empty for the server's default behaviour.
	By        Answerer `json:"by"`
	From      string   `json:"from,omitempty"`
	To        []string `json:"to,omitempty"`
	MessageID string   `json:"message_id,omitempty"`
}

// AttemptOf describes e as an attempt.
func AttemptOf(e Event) AttemptRecord {
	return AttemptRecord{
		Time: e.Time, Client: e.Client, Stage: e.Stage, Command: commandOf(e), Reply: e.Reply,
		By: e.By, From: e.From, To: e.To, MessageID: e.MessageID,
	}
}

// commandOf renders the command an event answered.
func commandOf(e Event) string {
	switch e.Stage {
	case StageGreeting:
		return "(connect)"
	case StageEHLO:
		return "EHLO " + e.Arg
	case StageAuth:
		return "AUTH " + e.Arg
	case StageMail:
		return "MAIL FROM:<" + e.Arg + ">"
	case StageRcpt:
		return "RCPT TO:<" + e.Arg + ">"
	case StageData:
		return "DATA (" + e.Arg + ")"
	case StageBounce, StageComplaint:
		return "(" + string(e.Stage) + " " + e.Arg + " about <" + strings.Join(e.To, ",") + "> to <" + e.From + ">)"
	}
	return string(e.Stage) + " " + e.Arg
}

// Refused reports whether e is a refusal (4xx, 5xx or a dropped
// connection), the attempts a record file keeps.
func (e Event) Refused() bool {
	return e.Reply == replyDropped || len(e.Reply) > 0 && (e.Reply[0] == '4' || e.Reply[0] == '5')
}

// WriteAttempt appends e to w as one JSON line of type "attempt".
func WriteAttempt(w io.Writer, e Event) error {
	a := AttemptOf(e)
	a.Type = RecordAttempt
	line, err := json.Marshal(a)
	return writeLine(w, line, err)
}

// writeLine writes an encoded record and its newline in one Write.
func writeLine(w io.Writer, line []byte, err error) error {
	if err != nil {
		return fmt.Errorf("smtptest: encode record: %w", err)
	}
	if _, err := w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("smtptest: write record: %w", err)
	}
	return nil
}
