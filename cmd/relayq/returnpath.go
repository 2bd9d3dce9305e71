package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"strings"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/returnpath"
	"github.com/relayq/relayq/returnpath/verp"
)

// verpKeyName is the queue file's secret for VERP addresses when
// bounces.secret_file is not set.
const verpKeyName = "verp"

// bounceSigner makes the VERP signer of bounces.domain, nil when it is "".
func bounceSigner(cfg *config.Config, store *queue.Store) (*verp.Signer, error) {
	b := cfg.Bounces
	if b.Domain == "" {
		return nil, nil
	}
	var key []byte
	if b.SecretFile != "" {
		raw, err := os.ReadFile(b.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("bounces.secret_file: %w", err)
		}
		key = []byte(strings.TrimSpace(string(raw)))
	} else {
		var err error
		if key, err = store.ReturnPath().Secret(verpKeyName, 32); err != nil {
			return nil, fmt.Errorf("bounces: the VERP key in the queue file: %w", err)
		}
	}
	s, err := verp.New(b.Domain, key)
	if err != nil {
		return nil, fmt.Errorf("bounces: %w", err)
	}
	return s, nil
}

// returnPath is the engine's ReturnPath hook, nil without a bounce domain.
func (o *outbound) returnPath() func(string, int) (string, error) {
	if o.verp == nil {
		return nil
	}
	return o.verp.Address
}

// listenBounces opens bounces.listen: the submission server's limits and
// timeouts, bounces.max_message_bytes, the same certificate for STARTTLS.
func (a *app) listenBounces(tlsConf *tls.Config) error {
	cfg := a.conf.cfg
	if len(cfg.Bounces.Listen) == 0 || a.out.verp == nil {
		return nil
	}
	lim := cfg.Bounces.Limits
	o := returnpath.Options{Store: a.store, Signer: a.out.verp, Suppression: a.out.supp, Logger: a.log.With("listener", "bounces"),
		Limits: returnpath.Limits{PerClient: lim.PerClient, PerAddress: lim.PerAddress, Window: lim.Window, DuplicateWindow: lim.DuplicateWindow}}
	o.FeedbackLoops = feedbackLoops(cfg.Bounces)
	if cfg.Bounces.Forward {
		// Not through the submission Acceptor: a report is outsider
		// content, neither authenticated nor signed (returnpath.Forwarder).
		fw := &returnpath.Forwarder{
			Store: a.store, Hostname: cfg.Hostname, Stream: cfg.Submission.DefaultStream, Clock: clock.Real,
			BeforeCommit: a.out.eng.ClaimFirst, OnQueued: a.out.eng.Enqueue, Draining: a.in.srv.Draining,
		}
		o.Forward = fw.Forward
	}
	rec, err := returnpath.NewRecorder(o)
	if err != nil {
		return err
	}
	a.metrics.m.WatchReturnPath(rec.Count)
	so := submissionOptions(cfg, a.store, tlsConf, a.log.With("listener", "bounces"), a.out.eng, a.metrics)
	so.MaxMessageBytes = cfg.Bounces.MaxMessageBytes
	so.Observer = nil // its refusals are not the submission side's
	so.Proxy = proxyWrap(cfg.Bounces.ProxyProtocol.Trusted, "bounces.proxy_protocol.trusted", a.log.With("listener", "bounces"))
	srv, err := returnpath.NewServer(so, rec)
	if err != nil {
		return err
	}
	a.in.bounces = srv
	for _, addr := range cfg.Bounces.Listen {
		if _, err := srv.Listen(addr); err != nil {
			srv.Close()
			return fmt.Errorf("bounces.listen: %w", err)
		}
	}
	return nil
}
