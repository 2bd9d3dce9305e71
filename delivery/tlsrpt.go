package delivery

import (
	"time"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/queue"
)

// TLSObserver is an Observer that also counts how deliveries were secured;
// the engine calls it when Options.Observer implements it.
type TLSObserver interface {
	// SecuredBy is called once per recipient per attempt that reached a
	// hop (or was refused one by its policy), with the attempt's status.
	SecuredBy(info smtpclient.TLSInfo, status queue.Status)
}

// TLSRecorder keeps the per-domain TLS results TLS-RPT (RFC 8460) reports
// on; the queue's (*queue.Store).TLS() is one.
type TLSRecorder interface {
	Record(domain string, at time.Time, r queue.TLSResult) error
}

// attemptTLS is how the attempt's connection was secured: Deliver gives
// every recipient of one attempt the same.
func attemptTLS(results []smtpclient.RcptResult) smtpclient.TLSInfo {
	for _, r := range results {
		if r.TLS.Policy != "" {
			return r.TLS
		}
	}
	return smtpclient.TLSInfo{}
}

// tlsArgs adds tls=POLICY (dane, mta-sts, opportunistic, none; none also
// when no session was reached), tls_version=TLSv1.3, none or fallback (in
// plaintext after opportunistic STARTTLS failed), and any failure to a
// delivery log line.
func tlsArgs(j *job, args []any) []any {
	t := j.tls
	if t.Policy == "" { // no session was reached
		return append(args, "tls", "none")
	}
	args = append(args, "tls", string(t.Policy), "tls_version", t.Name())
	if t.Failure != "" {
		key := "tls_failure"
		if t.Testing {
			key = "tls_would_fail" // MTA-STS testing: delivered regardless
		}
		args = append(args, key, string(t.Failure))
	}
	return args
}

// observeTLS counts one recipient's outcome by policy and, once per
// attempt, records the domain's TLS result for TLS-RPT, unless the
// outcome carried it into the store's own commit (tally).
func (l outcomeLog) observeTLS(j *job, o queue.Outcome, first bool, end time.Time) {
	t := j.tls
	if t.Policy == "" {
		return
	}
	if obs, ok := l.obs.(TLSObserver); ok {
		obs.SecuredBy(t, o.Status)
	}
	if r, ok := tlsResult(t, o); ok && first && l.tlsrpt != nil && !l.tlsInStore {
		if err := l.tlsrpt.Record(domainOf(o.Address), end, r); err != nil {
			l.log.Warn("tls-rpt: recording a result failed", "id", j.id, "err", err)
		}
	}
}

// tlsResult is what TLS-RPT counts of an attempt secured as t: DANE and
// MTA-STS sessions, and the failures of opportunistic STARTTLS (a refusal,
// a failed handshake) under "no-policy-found" (RFC 8460 section 4.4), the
// sessions that fell back to plaintext or will.
func tlsResult(t smtpclient.TLSInfo, o queue.Outcome) (queue.TLSResult, bool) {
	kind := map[smtpclient.TLSPolicy]string{smtpclient.PolicyDANE: "tlsa", smtpclient.PolicyMTASTS: "sts"}[t.Policy]
	if kind == "" && t.Failure != "" {
		kind = "no-policy-found"
	}
	return queue.TLSResult{Policy: kind, MX: o.RemoteMTA, Failure: string(t.Failure)}, kind != ""
}

// tally puts the attempt's TLS-RPT count on its first outcome when the
// store counts it in Record (tlsInStore).
func (l outcomeLog) tally(j *job, outcomes []queue.Outcome, end time.Time) []queue.Outcome {
	if len(outcomes) == 0 || !l.tlsInStore {
		return outcomes
	}
	if r, ok := tlsResult(j.tls, outcomes[0]); ok {
		o := &outcomes[0]
		o.TLSRPT = &queue.TLSTally{Domain: domainOf(o.Address), At: end, Result: r}
	}
	return outcomes
}
