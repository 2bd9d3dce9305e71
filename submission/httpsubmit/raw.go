package httpsubmit

import (
	"bufio"
	"errors"
	"net/http"
	"sync"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/rawmsg"
	"github.com/relayq/relayq/submission"
)

// maxHeaderBlock bounds the header block of a raw message read into memory.
const maxHeaderBlock = 1 << 20

// readRaw reads a message/rfc822 body: the envelope comes from the query
// (from=, repeated to=) or else from the From/Sender and To/Cc/Bcc fields.
// Bcc is always removed; missing Date and Message-ID are added; bare LF
// becomes CRLF. The body streams on to the queue.
// br is a reader from rawReaders for the request's lifetime: the body
// reads through it until the message is stored.
func (s *Server) readRaw(w http.ResponseWriter, r *http.Request, br *bufio.Reader) (*submitted, *smtp.SMTPError) {
	if e := checkQuery(r, rawParams); e != nil {
		return nil, e
	}
	limit := s.acc.MaxMessageBytes()
	br.Reset(http.MaxBytesReader(w, r.Body, limit+1))
	h, err := rawmsg.ReadHeader(br, min(maxHeaderBlock, int(limit)+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), errors.Is(err, rawmsg.ErrHeaderTooBig):
		return nil, submission.ErrTooBig
	case err != nil:
		return nil, malformed("message could not be read: %v", err)
	}
	q := r.URL.Query()
	sub := &submitted{from: q.Get("from"), to: q["to"]}
	var e *smtp.SMTPError
	if sub.hold, e = parseSendAt(q.Get("send_at")); e != nil {
		return nil, e
	}
	if _, ok := q["from"]; !ok {
		sub.from, err = senderOf(h)
		if err != nil {
			return nil, malformed("From: %v", err)
		}
	}
	if len(sub.to) == 0 {
		sub.to, err = h.Addresses("To", "Cc", "Bcc")
		if err != nil {
			return nil, malformed("%v", err)
		}
	}
	if len(sub.to) == 0 {
		return nil, errNoRecipients
	}
	h.Remove("Bcc")
	if sub.messageID, err = h.Complete(s.clock.Now(), s.acc.Hostname(), ""); err != nil {
		return nil, malformed("%v", err)
	}
	sub.body = h.Reader(br)
	return sub, nil
}

// rawReaders are the read buffers of raw submissions: a fresh 8 KiB buffer
// per request was, after io.MultiReader's copy buffer, the largest share
// of the garbage an HTTP submission made.
var rawReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 8<<10) }}

func getRawReader() *bufio.Reader { return rawReaders.Get().(*bufio.Reader) }

func putRawReader(br *bufio.Reader) {
	br.Reset(nil) // drop the request body
	rawReaders.Put(br)
}

// senderOf is the envelope sender a raw message names: Sender if present
// (RFC 5322 section 3.6.2: the one responsible), else the first From.
func senderOf(h *rawmsg.Header) (string, error) {
	for _, f := range []string{"Sender", "From"} {
		list, err := h.Addresses(f)
		if err != nil {
			return "", err
		}
		if len(list) > 0 {
			return list[0], nil
		}
	}
	return "", errors.New("no sender: give from= or a From header")
}
