package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/queue"
)

// tlsMetrics count how MX deliveries were secured.
type tlsMetrics struct {
	byPolicy *prometheus.CounterVec // policy, result
	failures *prometheus.CounterVec // policy, reason, enforced
	fallback *prometheus.CounterVec // result
}

// tlsPolicies and tlsFailures bound the label values; anything else is "other".
var (
	tlsPolicies = []smtpclient.TLSPolicy{smtpclient.PolicyDANE, smtpclient.PolicyMTASTS, smtpclient.PolicyOpportunistic, smtpclient.PolicyNone}
	tlsFailures = []smtpclient.Failure{smtpclient.FailStartTLSNotSupported, smtpclient.FailCertHostMismatch, smtpclient.FailCertExpired,
		smtpclient.FailCertNotTrusted, smtpclient.FailValidation, smtpclient.FailTLSAInvalid, smtpclient.FailDNSSECInvalid, smtpclient.FailMXMismatch}
)

func newTLSMetrics(reg *prometheus.Registry) tlsMetrics {
	t := tlsMetrics{
		byPolicy: counterVec("delivery_tls_total",
			"Delivery attempts per recipient by the TLS policy that applied (dane, mta-sts, opportunistic, none) and result.", "policy", "result"),
		failures: counterVec("delivery_tls_failures_total",
			"TLS failures per recipient by policy and RFC 8460 reason (policy none: opportunistic STARTTLS refused or a failed handshake); enforced=false counts MTA-STS testing mode, where the message went anyway.", "policy", "reason", "enforced"),
		fallback: counterVec("delivery_tls_fallback_total",
			"Delivery attempts per recipient that went in plaintext because opportunistic STARTTLS failed (refused in the session, or a handshake with the host failed less than an hour before), by result.", "result"),
	}
	reg.MustRegister(t.byPolicy, t.failures, t.fallback)
	return t
}

// SecuredBy implements delivery.TLSObserver.
func (o deliveryObserver) SecuredBy(info smtpclient.TLSInfo, s queue.Status) {
	policy := other
	for _, p := range tlsPolicies {
		if info.Policy == p {
			policy = string(p)
		}
	}
	result := string(s)
	switch s {
	case queue.StatusDelivered, queue.StatusDeferred, queue.StatusBounced:
	default:
		result = other
	}
	o.m.tls.byPolicy.WithLabelValues(policy, result).Inc()
	if info.Fallback {
		o.m.tls.fallback.WithLabelValues(result).Inc()
	}
	if info.Failure == "" {
		return
	}
	reason := other
	for _, f := range tlsFailures {
		if info.Failure == f {
			reason = string(f)
		}
	}
	enforced := "true"
	if info.Testing || info.Fallback { // the mail went anyway
		enforced = "false"
	}
	o.m.tls.failures.WithLabelValues(policy, reason, enforced).Inc()
}
