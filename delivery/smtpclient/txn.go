package smtpclient

import (
	"context"
	"io"
	"strings"

	"github.com/relayq/relayq/internal/crlf"
	"github.com/relayq/relayq/internal/mime7bit"
	"github.com/relayq/relayq/smtpcodes"
)

// txn is one mail transaction on an open session, one method per SMTP
// stage: check (what needs no command), mail, rcpt, data. It lives for one
// call of transact. Each stage either hands on to the next or ends the
// attempt on this hop (done), saying how in an attemptEnd.
type txn struct {
	s       *session
	w       *wire
	env     Envelope
	results []RcptResult

	// asked are the indexes of the recipients the server is asked about
	// and rcpts their RCPT commands; the others failed in check. accepted
	// are those the server took.
	asked    []int
	rcpts    []string
	accepted []int
	// more are the recipients refused for the transaction's number of
	// recipients (overLimit), for another transaction.
	more []int
	// utf8: the envelope needs SMTPUTF8 (RFC 6531).
	utf8 bool
	// pipelined: MAIL, RCPT and DATA went in one write (RFC 2920);
	// dataErr is then the server's refusal of that DATA, if it refused.
	pipelined bool
	dataErr   error
	// plan converts the content to 7 bit when it is Needed (see fit).
	plan mime7bit.Plan
}

// transact delivers env in as many transactions on the connection as the
// server's limit on recipients calls for: when it refused recipients only
// for their number (overLimit), the rest go at once in a new transaction
// (RFC 5321 section 4.5.3.1.10), as part of the same attempt. Each
// transaction accepts at least one recipient, so this ends. A later
// transaction that cannot start leaves the rest with their 452: deferred.
func (s *session) transact(ctx context.Context, env Envelope, body func() (io.ReadCloser, error), results []RcptResult) attemptEnd {
	end, more := s.transactOnce(ctx, env, body, results)
	for end.final && len(more) > 0 && s.reusable && ctx.Err() == nil {
		rest := env
		rest.Recipients = make([]RcptReq, len(more))
		sub := make([]RcptResult, len(more))
		for k, i := range more {
			rest.Recipients[k], sub[k].Address = env.Recipients[i], results[i].Address
		}
		s.reusable = false // until this transaction ends cleanly
		next, subMore := s.transactOnce(ctx, rest, body, sub)
		if !next.final {
			break
		}
		for k, i := range more {
			results[i] = sub[k]
		}
		for k, j := range subMore {
			subMore[k] = more[j]
		}
		more = subMore
	}
	return end
}

// transactOnce runs MAIL, RCPT and DATA, pipelined in one round trip when
// the server offers PIPELINING (RFC 2920). The end is final unless the
// server did not accept MAIL for a reason worth trying another hop for.
// more are the recipients refused only for their number.
func (s *session) transactOnce(ctx context.Context, env Envelope, body func() (io.ReadCloser, error), results []RcptResult) (end attemptEnd, more []int) {
	t := &txn{s: s, w: s.w, env: env, results: results}
	if end, done := t.check(); done {
		return end, nil
	}
	if end, done := t.fit(body); done {
		return end, nil
	}
	if end, done := t.mail(ctx); done {
		return end, nil
	}
	if end, done := t.rcpt(ctx); done {
		return end, t.more
	}
	return t.data(ctx, body), t.more
}

// overLimit reports whether a refused RCPT may say only that the
// transaction has enough recipients: a 452 (RFC 5321 section 4.5.3.1.10,
// "452 4.5.3 Too many recipients"), or the 552 older servers send for it
// (transient at RCPT, smtpcodes), once the server has accepted one. A
// recipient refused for its own sake is refused again in the next
// transaction, with none accepted there, and deferred as before.
func (t *txn) overLimit(err error) bool {
	code := replyCode(err)
	return (code == 452 || code == 552) && len(t.accepted) > 0
}

// set gives recipient i the reply r from this hop.
func (t *txn) set(i int, r smtpcodes.Reply) {
	t.results[i].Reply, t.results[i].RemoteMTA, t.results[i].DSN = r, t.s.hop.Host, t.w.has("DSN")
}

// setAll ends the attempt with r for every recipient and says goodbye.
func (t *txn) setAll(r smtpcodes.Reply) (attemptEnd, bool) {
	for i := range t.results {
		t.set(i, r)
	}
	t.w.quit()
	return attemptEnd{reply: r, final: true}, true
}

// failOpen ends the attempt after a 421 or a lost connection: everyone not
// already bounced gets r (RFC 5321 section 3.8).
func (t *txn) failOpen(r smtpcodes.Reply) (attemptEnd, bool) {
	for i := range t.results {
		if t.results[i].Reply.Class != smtpcodes.Permanent {
			t.set(i, r)
		}
	}
	return attemptEnd{reply: r, final: true}, true
}

// setAccepted gives every recipient the server accepted the reply r.
func (t *txn) setAccepted(r smtpcodes.Reply) {
	for _, i := range t.accepted {
		t.set(i, r)
	}
}

// check refuses, without a command, what this server cannot take: a
// sender or recipient with a line break, a UTF-8 address for a server
// without SMTPUTF8 (RFC 6531 section 3.2: no downgrade here), a message
// over the server's SIZE (RFC 1870). It builds the RCPT commands.
func (t *txn) check() (attemptEnd, bool) {
	w, env, addr := t.w, t.env, t.s.hop.Addr()
	hasUTF8, hasDSN := w.has("SMTPUTF8"), w.has("DSN")
	if strings.ContainsAny(env.From, "\r\n") {
		return t.setAll(smtpcodes.Classify(smtpcodes.StageMail, smtpcodes.Permanentf("5.1.7", "delivery: sender address contains a line break")))
	}
	if !isASCII(env.From) && !hasUTF8 {
		return t.setAll(smtpcodes.Classify(smtpcodes.StageMail, smtpcodes.Permanentf("5.6.7",
			"delivery: %s does not support SMTPUTF8, needed for sender %s", addr, env.From)))
	}
	if limit := w.maxSize(); limit > 0 && env.Size > limit {
		return t.setAll(smtpcodes.Classify(smtpcodes.StageMail, smtpcodes.Permanentf("5.3.4",
			"delivery: message of %d bytes exceeds the %d bytes %s accepts (RFC 1870)", env.Size, limit, addr)))
	}
	t.utf8 = env.SMTPUTF8 || !isASCII(env.From)
	for i, rq := range env.Recipients {
		switch {
		case strings.ContainsAny(rq.Address, "\r\n"):
			t.set(i, smtpcodes.Classify(smtpcodes.StageRcpt, smtpcodes.Permanentf("5.1.3", "delivery: recipient address contains a line break")))
		case !isASCII(rq.Address) && !hasUTF8:
			t.set(i, smtpcodes.Classify(smtpcodes.StageRcpt, smtpcodes.Permanentf("5.6.7",
				"delivery: %s does not support SMTPUTF8, needed for recipient %s", addr, rq.Address)))
		default:
			t.asked = append(t.asked, i)
			t.utf8 = t.utf8 || !isASCII(rq.Address)
		}
	}
	// After the loop: whether MAIL says SMTPUTF8 decides how each ORCPT is
	// written (RFC 6533 section 3).
	for _, i := range t.asked {
		t.rcpts = append(t.rcpts, rcptCommand(env.Recipients[i], hasDSN, t.utf8 && hasUTF8))
	}
	if len(t.asked) == 0 {
		t.s.reusable = true // nothing was said: the connection is as it was
		return attemptEnd{final: true}, true
	}
	return attemptEnd{}, false
}

// mail sends MAIL (with every RCPT and DATA behind it when pipelining) and
// reads its reply. A refused MAIL ends the attempt on this hop; unless the
// refusal is permanent, the next hop may take the message.
func (t *txn) mail(ctx context.Context) (attemptEnd, bool) {
	w := t.w
	// A group larger than maxPipelined waits for each reply instead: RFC
	// 2920 section 3.1 warns that a client writing more than the TCP
	// windows hold while the server's replies pile up can deadlock both.
	t.pipelined = w.has("PIPELINING") && len(t.rcpts) <= maxPipelined
	w.queue(mailCommand(t.env, w, t.utf8 && w.has("SMTPUTF8"), w.has("DSN")))
	if t.pipelined {
		for _, l := range t.rcpts {
			w.queue(l)
		}
		w.queue("DATA")
	}
	if err := w.flush(); err != nil {
		return attemptEnd{reply: classify(ctx, t.s.hop, smtpcodes.StageMail, err)}, true
	}
	_, _, err := w.expect(2)
	if err == nil {
		return attemptEnd{}, false
	}
	r := classify(ctx, t.s.hop, smtpcodes.StageMail, err)
	if isServerReply(err) && t.pipelined && !r.SuspendsDestination() {
		w.drain(len(t.rcpts) + 1) // the RCPTs' and DATA's replies
	}
	if r.Class == smtpcodes.Permanent {
		return t.setAll(r)
	}
	if isServerReply(err) {
		w.quit()
	}
	return attemptEnd{reply: r}, true
}

// rcpt reads each RCPT's reply (sending it first when not pipelining) and,
// when pipelining, the reply to DATA. With no recipient accepted the
// transaction is reset and the connection kept.
func (t *txn) rcpt(ctx context.Context) (attemptEnd, bool) {
	w := t.w
	for k, i := range t.asked {
		var err error
		if t.pipelined {
			_, _, err = w.expect(2)
		} else {
			_, _, err = w.cmd(2, t.rcpts[k])
		}
		if err == nil {
			t.accepted = append(t.accepted, i)
			continue
		}
		r := classify(ctx, t.s.hop, smtpcodes.StageRcpt, err)
		if !isServerReply(err) || r.SuspendsDestination() {
			return t.failOpen(r)
		}
		t.set(i, r)
		if t.overLimit(err) {
			t.more = append(t.more, i)
			if !t.pipelined {
				// The rest would be refused too: they wait for the next
				// transaction, unasked.
				for _, j := range t.asked[k+1:] {
					t.set(j, r)
					t.more = append(t.more, j)
				}
				break
			}
		}
	}
	if t.pipelined {
		// Read here to stay in step; data acts on a refusal.
		if _, _, t.dataErr = w.expect(3); t.dataErr != nil && !isServerReply(t.dataErr) {
			return t.failOpen(classify(ctx, t.s.hop, smtpcodes.StageData, t.dataErr))
		}
		if t.dataErr == nil {
			if err := w.ahead(t.s.raw); err != nil {
				return t.outOfStep(ctx, err)
			}
		}
	}
	if len(t.accepted) > 0 {
		return attemptEnd{}, false
	}
	if t.pipelined && t.dataErr == nil {
		// DATA was taken with no recipient: end it with a lone dot (RFC
		// 2920 section 3.1); the server has nobody to deliver to.
		_, _, _ = w.cmd(0, ".")
	}
	if _, _, err := w.cmd(2, "RSET"); err == nil {
		t.s.uses++
		t.s.reusable = true
	} else {
		w.quit()
	}
	return attemptEnd{final: true}, true
}

// outOfStep ends the attempt after the server sent a reply nobody asked
// for where it should wait for the content: every recipient still open is
// deferred (4.5.0) and the connection dropped without a word, since the
// server takes whatever comes after a 354 as content.
func (t *txn) outOfStep(ctx context.Context, err error) (attemptEnd, bool) {
	_ = t.s.raw.Close()
	return t.failOpen(classify(ctx, t.s.hop, smtpcodes.StageData, err))
}

// dataFailed ends the attempt when the server refuses DATA or the message:
// its reply applies to every recipient it accepted.
func (t *txn) dataFailed(ctx context.Context, err error) attemptEnd {
	r := classify(ctx, t.s.hop, smtpcodes.StageData, err)
	if !isServerReply(err) || r.SuspendsDestination() {
		end, _ := t.failOpen(r)
		return end
	}
	t.setAccepted(r)
	t.w.quit()
	return attemptEnd{reply: r, final: true}
}

// data opens the queued body, sends DATA when it was not pipelined, then
// the content and the final dot, and gives the reply to every accepted
// recipient. Failing to read the body aborts the transaction: the mail
// stays queued (4.3.0).
func (t *txn) data(ctx context.Context, body func() (io.ReadCloser, error)) attemptEnd {
	if t.dataErr != nil {
		return t.dataFailed(ctx, t.dataErr)
	}
	rc, err := body()
	if err != nil {
		t.setAccepted(smtpcodes.Classify(smtpcodes.StageData, smtpcodes.Transientf("4.3.0", "delivery: open queued body: %v", err)))
		if t.pipelined {
			// The server took DATA and waits for content we cannot send;
			// only closing aborts it (RFC 5321 section 4.1.1.4).
			_ = t.s.raw.Close()
		} else {
			_, _, _ = t.w.cmd(0, "RSET")
			t.w.quit()
		}
		return attemptEnd{final: true}
	}
	defer rc.Close()
	if !t.pipelined {
		if _, _, err := t.w.cmd(3, "DATA"); err != nil {
			return t.dataFailed(ctx, err)
		}
		if err := t.w.ahead(t.s.raw); err != nil {
			end, _ := t.outOfStep(ctx, err)
			return end
		}
	}
	if end, done := t.content(ctx, rc); done {
		return end
	}
	code, text, err := t.w.expect(2)
	if err != nil {
		return t.dataFailed(ctx, err)
	}
	r := smtpcodes.Classify(smtpcodes.StageData, serverReply(code, text))
	t.setAccepted(r)
	t.s.uses++
	t.s.reusable = true // QUIT is sent when the cached connection is closed
	return attemptEnd{reply: r, final: true}
}

// content sends the body, CRLF-normalised and dot-stuffed, and the final
// dot. A body that cannot be read aborts DATA by closing the connection:
// without the final dot the server discards what it got (RFC 5321 section
// 4.1.1.4).
func (t *txn) content(ctx context.Context, rc io.Reader) (attemptEnd, bool) {
	dw := &dataWriter{wire: t.w}
	src := &trackedReader{r: rc}
	dst := crlf.NewWriter(dw)
	var err error
	if t.plan.Needed() {
		err = t.plan.Convert(dst, src)
	} else {
		buf := copyBuffers.Get().(*[]byte)
		_, err = io.CopyBuffer(dst, src, *buf)
		copyBuffers.Put(buf)
	}
	if err == nil {
		err = dst.Flush()
	}
	if src.err != nil {
		_ = t.s.raw.Close()
		r := smtpcodes.Classify(smtpcodes.StageData, smtpcodes.Transientf("4.3.0", "delivery: read queued body: %v", src.err))
		t.setAccepted(r)
		return attemptEnd{reply: r, final: true}, true
	}
	if err == nil {
		err = dw.close()
	}
	if err == nil {
		err = t.w.flush()
	}
	if err != nil {
		return t.failOpen(classify(ctx, t.s.hop, smtpcodes.StageData, err))
	}
	return attemptEnd{}, false
}
