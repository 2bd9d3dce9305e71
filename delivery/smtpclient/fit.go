package smtpclient

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/relayq/relayq/internal/mime7bit"
	"github.com/relayq/relayq/smtpcodes"
)

// fit makes sure, before MAIL, that the message can go to this server as
// it offers itself, reading the body only where an extension is missing
// (rare: nearly every server offers both):
//   - without SMTPUTF8, a message submitted with SMTPUTF8 whose header
//     section holds UTF-8 is refused with 5.6.7 (RFC 6531 section 3.2: it
//     must not be sent; relayq does not downgrade, as for UTF-8 addresses);
//   - without 8BITMIME, 8-bit content is converted to 7 bit (mime7bit,
//     RFC 6152 section 3), or refused with 5.6.3 where it cannot be: 8-bit
//     header fields, multipart/signed, malformed MIME, or a message relayq
//     signed (Envelope.Signed), whose DKIM body hash conversion would break.
//
// A refusal applies to every recipient still asked about; nothing has been
// said to the server, so the connection stays usable.
func (t *txn) fit(body func() (io.ReadCloser, error)) (attemptEnd, bool) {
	w, addr := t.w, t.s.hop.Addr()
	if t.env.SMTPUTF8 && !w.has("SMTPUTF8") {
		utf8, err := readBody(body, utf8Header)
		if err != nil {
			return t.refuse(smtpcodes.Transientf("4.3.0", "delivery: read queued body: %v", err))
		}
		if utf8 {
			return t.refuse(smtpcodes.Permanentf("5.6.7",
				"delivery: %s does not support SMTPUTF8, needed for the message's UTF-8 header fields (RFC 6531)", addr))
		}
	}
	if w.has("8BITMIME") {
		return attemptEnd{}, false
	}
	var plan mime7bit.Plan
	_, err := readBody(body, func(r io.Reader) (bool, error) {
		var err error
		plan, err = mime7bit.Scan(r)
		return false, err
	})
	switch {
	case errors.Is(err, mime7bit.ErrUnconvertible):
		return t.refuse(smtpcodes.Permanentf("5.6.3",
			"delivery: %s does not support 8BITMIME and the message cannot be converted to 7 bit: %v", addr, err))
	case err != nil:
		return t.refuse(smtpcodes.Transientf("4.3.0", "delivery: read queued body: %v", err))
	case !plan.Needed():
		return attemptEnd{}, false
	case t.env.Signed:
		return t.refuse(smtpcodes.Permanentf("5.6.3",
			"delivery: %s does not support 8BITMIME, and converting the message to 7 bit would break its DKIM signature", addr))
	}
	var size int64
	_, err = readBody(body, func(r io.Reader) (bool, error) {
		c := &countWriter{}
		err := plan.Convert(c, r)
		size = c.n
		return false, err
	})
	if err != nil {
		return t.refuse(smtpcodes.Transientf("4.3.0", "delivery: read queued body: %v", err))
	}
	if limit := w.maxSize(); limit > 0 && size > limit {
		return t.refuse(smtpcodes.Permanentf("5.3.4",
			"delivery: message of %d bytes in 7 bit exceeds the %d bytes %s accepts (RFC 1870)", size, limit, addr))
	}
	t.plan, t.env.Size = plan, size
	return attemptEnd{}, false
}

// refuse gives every recipient still to be asked r and ends the attempt
// on this hop without a command.
func (t *txn) refuse(err error) (attemptEnd, bool) {
	r := smtpcodes.Classify(smtpcodes.StageData, err)
	for _, i := range t.asked {
		t.set(i, r)
	}
	t.s.reusable = true
	return attemptEnd{reply: r, final: true}, true
}

// readBody opens the queued body and runs f over it.
func readBody(body func() (io.ReadCloser, error), f func(io.Reader) (bool, error)) (bool, error) {
	rc, err := body()
	if err != nil {
		return false, err
	}
	defer rc.Close()
	return f(rc)
}

// utf8Header reports whether the header section (up to the first empty
// line) holds a byte above 0x7f.
func utf8Header(r io.Reader) (bool, error) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull {
			if err == io.EOF {
				return !isASCII(string(line)), nil
			}
			return false, err
		}
		if !isASCII(string(line)) {
			return true, nil
		}
		if err == nil && len(bytes.TrimRight(line, "\r\n")) == 0 {
			return false, nil
		}
	}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
