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
// on; *queue.Store is one.
type TLSRecorder interface {
	RecordTLS(domain string, at time.Time, r queue.TLSResult) error
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
// when no session was reached), tls_version=TLSv1.3 or none, and any
// verification failure to a delivery log line.
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
// outcome carried it into the store's own commit (tallyTLS).
func (e *Engine) observeTLS(j *job, o queue.Outcome, first bool, end time.Time) {
	t := j.tls
	if t.Policy == "" {
		return
	}
	if obs, ok := e.obs.(TLSObserver); ok {
		obs.SecuredBy(t, o.Status)
	}
	if r, ok := tlsResult(t, o); ok && first && e.tlsrpt != nil && !e.tlsInRecord() {
		if err := e.tlsrpt.RecordTLS(domainOf(o.Address), end, r); err != nil {
			e.log.Warn("tls-rpt: recording a result failed", "id", j.id, "err", err)
		}
	}
}

// tlsResult is what TLS-RPT counts of an attempt secured as t: DANE and
// MTA-STS sessions only.
func tlsResult(t smtpclient.TLSInfo, o queue.Outcome) (queue.TLSResult, bool) {
	kind := map[smtpclient.TLSPolicy]string{smtpclient.PolicyDANE: "tlsa", smtpclient.PolicyMTASTS: "sts"}[t.Policy]
	return queue.TLSResult{Policy: kind, MX: o.RemoteMTA, Failure: string(t.Failure)}, kind != ""
}

// tlsInRecord: the TLS-RPT recorder is the store that takes the outcomes,
// so an attempt's count goes into Record's transaction (one commit per
// attempt, not two).
func (e *Engine) tlsInRecord() bool {
	s, ok := e.tlsrpt.(*queue.Store)
	return ok && s == e.store
}

// tallyTLS puts the attempt's TLS-RPT count on its first outcome when the
// store counts it in Record (tlsInRecord).
func (e *Engine) tallyTLS(j *job, outcomes []queue.Outcome, end time.Time) []queue.Outcome {
	if len(outcomes) == 0 || !e.tlsInRecord() {
		return outcomes
	}
	if r, ok := tlsResult(j.tls, outcomes[0]); ok {
		o := &outcomes[0]
		o.TLSRPT = &queue.TLSTally{Domain: domainOf(o.Address), At: end, Result: r}
	}
	return outcomes
}
