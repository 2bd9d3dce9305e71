package report

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"

	"github.com/emersion/go-message"
	"github.com/emersion/go-message/textproto"
)

// Kind is what a message reports.
type Kind uint8

const (
	KindUnknown   Kind = iota
	KindDSN            // RFC 3464 multipart/report with delivery status
	KindBounce         // a failure report in free text
	KindFeedback       // RFC 5965 abuse or fraud report
	KindAutoReply      // RFC 3834 automatic response (out of office)
	KindDelay          // a delay warning in free text: still being retried
)

var kindNames = [...]string{"unknown", "dsn", "bounce", "feedback", "auto_reply", "delay"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Action is a DSN recipient's Action field (RFC 3464 section 2.3.3).
type Action uint8

const (
	ActionOther Action = iota
	ActionFailed
	ActionDelayed
	ActionDelivered
	ActionRelayed
	ActionExpanded
)

var actions = map[string]Action{"failed": ActionFailed, "delayed": ActionDelayed,
	"delivered": ActionDelivered, "relayed": ActionRelayed, "expanded": ActionExpanded}

// Recipient is one per-recipient block of a DSN.
type Recipient struct {
	Final, Original string // addresses, without their "rfc822;" type
	Action          Action
	Status          string // "5.1.1"
	Reply           string // the Diagnostic-Code's text, "550 5.1.1 ..."
	RemoteMTA       string
}

// Report is what Parse understood of one message.
type Report struct {
	Kind       Kind
	Recipients []Recipient // KindDSN
	// Status and Reply: KindBounce's best status from the text ("5.0.0"
	// when it names none), KindDelay's 4.x.x, and the line it came from.
	Status, Reply string
	// FeedbackType (KindFeedback) is lower-cased: abuse, fraud, virus,
	// other (RFC 5965 section 7.3), not-spam (RFC 6430), auth-failure (RFC 6591).
	FeedbackType string
	// OriginalRcptTo is a complaint's recipient: its Original-Rcpt-To
	// field, else the To of the original message's header.
	OriginalRcptTo string
	// OriginalReturnPath and OriginalMessageID are a complaint's returned
	// original's Return-Path (the envelope sender it was delivered with)
	// and Message-ID, as written there (outsiders' words: verify them).
	OriginalReturnPath, OriginalMessageID string
	// Text is the start of a DSN's or bounce's human-readable text (at
	// most maxSignBytes), up to the copy of the returned message: where
	// Exim, which always says Status: 5.0.0, gives the reason (see
	// Specific).
	Text string
}

// Limits on what Parse reads of an outsider's message.
const (
	maxParts       = 32
	maxDepth       = 4
	maxFieldBytes  = 128 << 10
	maxTextBytes   = 64 << 10
	maxRecipients  = 1000
	maxHeaderBytes = 64 << 10
	maxSignBytes   = 8 << 10 // of text searched for words (a warning's)
)

// ErrNotMessage is Parse's answer to bytes without a readable header.
var ErrNotMessage = errors.New("report: not a message")

// Parse reads one message.
func Parse(b []byte) (Report, error) {
	top, err := message.ReadWithOptions(bytes.NewReader(b), &message.ReadOptions{MaxHeaderBytes: maxHeaderBytes})
	if top == nil {
		return Report{}, errors.Join(ErrNotMessage, err)
	}
	w := walker{}
	w.walk(top, 0)
	switch {
	case w.dsn != nil:
		return Report{Kind: KindDSN, Recipients: w.dsn, Text: beforeCopy(w.body)}, nil
	case w.feedback != nil:
		r := *w.feedback
		r.Kind = KindFeedback
		if r.OriginalRcptTo == "" {
			r.OriginalRcptTo = w.orig.To
		}
		r.OriginalReturnPath, r.OriginalMessageID = w.orig.ReturnPath, w.orig.MessageID
		return r, nil
	}
	if looksBounce(top.Header) {
		if w.status != "" && w.status[0] == '4' && delayWarning(top.Header, strings.ToLower(w.body)) {
			return Report{Kind: KindDelay, Status: w.status, Reply: w.line}, nil
		}
		r := Report{Kind: KindBounce, Status: w.status, Reply: w.line, Text: beforeCopy(w.body)}
		if r.Status == "" || r.Status[0] != '5' {
			r.Status, r.Reply = "5.0.0", firstNonEmpty(w.line, "")
		}
		return r, nil
	}
	if autoReply(top.Header) {
		return Report{Kind: KindAutoReply}, nil
	}
	return Report{Kind: KindUnknown}, nil
}

// walker gathers what the parts of one message say.
type walker struct {
	parts        int
	text         int
	dsn          []Recipient
	feedback     *Report
	orig         original
	status, line string
	body         string // the start of the first text parts
}

func (w *walker) walk(e *message.Entity, depth int) {
	w.parts++
	if w.parts > maxParts {
		return
	}
	mt, _, _ := e.Header.ContentType()
	if mr := e.MultipartReader(); mr != nil {
		if depth >= maxDepth {
			return
		}
		for w.parts < maxParts {
			p, err := mr.NextPart()
			if err != nil {
				return
			}
			w.walk(p, depth+1)
		}
		return
	}
	switch mt {
	case "message/delivery-status", "message/global-delivery-status":
		if w.dsn == nil {
			w.dsn = deliveryStatus(e.Body)
		}
	case "message/feedback-report":
		if w.feedback == nil {
			w.feedback = feedbackReport(e.Body)
		}
	case "message/rfc822", "text/rfc822-headers", "message/global", "message/global-headers":
		if !w.orig.read {
			w.orig = originalHeader(e.Body)
		}
	case "text/plain", "":
		if w.status == "" && w.text < maxTextBytes {
			w.scanText(e.Body)
		}
	}
}

// scanText looks for the first 5.x.x status in free text (RFC 3463),
// else the first 4.x.x, keeping the line it was on.
func (w *walker) scanText(r io.Reader) {
	b, _ := io.ReadAll(io.LimitReader(r, int64(maxTextBytes-w.text)))
	w.text += len(b)
	if len(w.body) < maxSignBytes {
		w.body += string(b[:min(len(b), maxSignBytes-len(w.body))])
	}
	var soft, softLine string
	for line := range strings.Lines(string(b)) {
		code := findStatus(line)
		if code == "" {
			continue
		}
		if code[0] == '5' {
			w.status, w.line = code, oneLine(line)
			return
		}
		if soft == "" {
			soft, softLine = code, oneLine(line)
		}
	}
	if soft != "" {
		w.status, w.line = soft, softLine
	}
}

// fieldBlocks reads RFC 822-style field blocks separated by blank lines,
// the form of delivery-status and feedback-report parts.
func fieldBlocks(r io.Reader, max int) []textproto.Header {
	br := bufio.NewReader(io.LimitReader(r, maxFieldBytes))
	var blocks []textproto.Header
	for len(blocks) < max {
		for { // blank lines between blocks
			c, err := br.Peek(1)
			if err != nil {
				return blocks
			}
			if c[0] != '\r' && c[0] != '\n' {
				break
			}
			_, _ = br.ReadByte()
		}
		h, err := textproto.ReadHeader(br)
		if h.Len() > 0 {
			blocks = append(blocks, h)
		}
		if err != nil {
			return blocks
		}
	}
	return blocks
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
