package drain

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
)

// Engine is what a drain needs of delivery (*delivery.Engine has it):
// stopping its attempts, and judging replies the way it does.
type Engine interface {
	Pause(ctx context.Context) error
	Resume()
	Outcomes(env *queue.Envelope, rcpts []queue.Recipient, results []smtpclient.RcptResult, end time.Time) ([]queue.Outcome, []queue.Notice)
}

// Intake is the switch of the submission side (*submission.Server).
type Intake interface{ SetDraining(on bool) }

// DefaultClaimFor is how long a message in flight when a drain ends
// (kill -9, a stop, a peer gone mid-send) waits before it is due again.
// The claim guards nothing concurrent: while the process lives, delivery
// stays paused until the run has ended (Stop waits for it), and after a
// crash no session is left. So it is only the pause before the node's own
// delivery (or the next drain, whose flush makes it due at once anyway)
// tries the message again: a minute, as a first retry, rather than the
// ten minutes that kept a stopped batch's few messages waiting while the
// rest of the queue, made due by the drain's flush, went at once.
const DefaultClaimFor = time.Minute

// Options configure a Drainer.
type Options struct {
	Store  *queue.Store
	Engine Engine
	// Intake, if set, is turned off for the drain.
	Intake Intake
	// Hostname is the EHLO name toward the peer.
	Hostname string
	// ConnectTimeout and CommandTimeout bound the SMTP sessions (0: the
	// smtpclient defaults).
	ConnectTimeout, CommandTimeout time.Duration
	// RootCAs verifies the peer's certificate when credentials are sent;
	// nil means the system pool.
	RootCAs *x509.CertPool
	// Sessions is how many messages are handed over at once (default 8).
	Sessions int
	// ClaimFor is how long a claimed message waits before it is due again
	// if the drain dies or is stopped with it in flight (default
	// DefaultClaimFor).
	ClaimFor time.Duration
	// DialContext replaces the network dial (tests).
	DialContext func(ctx context.Context, network, address string) (net.Conn, error)
	Clock       clock.Clock // nil means clock.Real
	Logger      *slog.Logger
}

// Request is one drain: where to, and as whom.
type Request struct {
	// To is the peer's "host:port".
	To string `json:"to"`
	// Username and Password, when Username is set, authenticate to the
	// peer (AUTH PLAIN or LOGIN). They are sent only over STARTTLS with a
	// verified certificate, unless AllowInsecureAuth.
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// AllowInsecureAuth sends the credentials without TLS (a peer on a
	// trusted link without a certificate).
	AllowInsecureAuth bool `json:"allow_insecure_auth,omitempty"`
}

// State is where a drain stands.
type State string

// The states of a drain.
const (
	StateIdle     State = "idle"     // no drain since start, or stopped: in service
	StateRunning  State = "running"  // handing messages over
	StateFinished State = "finished" // every message was tried; out of service until Stop
	StateFailed   State = "failed"   // ended early (Error says why); out of service until Stop
)

// Progress is what a drain has done so far.
type Progress struct {
	State State  `json:"state"`
	To    string `json:"to,omitempty"`
	// Drained counts messages handed over whole (deleted here).
	Drained int `json:"drained"`
	// Failed counts messages the peer did not take whole: some recipient
	// was refused (5xx: bounced here; 4xx: still queued here).
	Failed int `json:"failed"`
	// Left is how many messages, held ones excluded, are still queued here
	// and not yet tried by this drain.
	Left int `json:"left"`
	// Held counts held messages, which a drain leaves alone.
	Held int `json:"held"`
	// Queued is every message still in this node's queue.
	Queued   int       `json:"queued"`
	Started  time.Time `json:"started,omitzero"`
	Ended    time.Time `json:"ended,omitzero"`
	Error    string    `json:"error,omitempty"`
	Draining bool      `json:"draining"` // the node is out of service
}

// ErrRunning is returned by Start while a drain runs.
var ErrRunning = errors.New("drain: a drain is already running")

// Drainer runs at most one drain at a time. The zero value is not usable:
// build one with New.
type Drainer struct {
	o Options

	mu       sync.Mutex
	p        Progress
	tried    int // messages tried by the current run and still queued (failed, held aside)
	draining bool
	cancel   context.CancelFunc
	done     chan struct{}
}

// New builds a Drainer.
func New(o Options) *Drainer {
	if o.Sessions <= 0 {
		o.Sessions = 8
	}
	if o.ClaimFor <= 0 {
		o.ClaimFor = DefaultClaimFor
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Drainer{o: o, p: Progress{State: StateIdle}}
}

// checkTo validates a peer address.
func checkTo(to string) error {
	host, port, err := net.SplitHostPort(to)
	if err != nil || host == "" {
		return fmt.Errorf("drain: peer %q: want HOST:PORT", to)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("drain: peer %q: bad port", to)
	}
	return nil
}

// Start takes the node out of service and starts handing its queue to
// req.To in the background. It fails with ErrRunning while a drain runs.
// Starting again after a run ended drains what is left.
func (d *Drainer) Start(req Request) (Progress, error) {
	if err := checkTo(req.To); err != nil {
		return d.Progress(), err
	}
	d.mu.Lock()
	if d.p.State == StateRunning {
		d.mu.Unlock()
		return d.Progress(), ErrRunning
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel, d.done = cancel, make(chan struct{})
	d.p = Progress{State: StateRunning, To: req.To, Started: d.o.Clock.Now()}
	d.tried = 0
	d.draining = true
	d.mu.Unlock()
	if d.o.Intake != nil {
		d.o.Intake.SetDraining(true)
	}
	d.o.Logger.Info("drain started: no intake, no delivery", "to", req.To)
	r := &run{d: d, req: req, dialer: d.dialer(req), hop: hopOf(req)}
	go func() {
		defer close(d.done)
		err := r.run(ctx)
		d.end(err)
	}()
	return d.Progress(), nil
}

// end books the end of a run.
func (d *Drainer) end(err error) {
	d.mu.Lock()
	d.p.Ended = d.o.Clock.Now()
	d.p.State = StateFinished
	if err != nil {
		d.p.State, d.p.Error = StateFailed, err.Error()
	}
	d.mu.Unlock()
	p := d.Progress()
	d.o.Logger.Info("drain ended", "state", p.State, "drained", p.Drained, "failed", p.Failed, "left", p.Left, "held", p.Held, "err", p.Error)
}

// Stop ends a running drain after the messages in flight (their outcome is
// recorded) and puts the node back in service: intake on, delivery
// resumed. It returns the final progress; without a drain it does nothing.
func (d *Drainer) Stop(ctx context.Context) (Progress, error) {
	d.mu.Lock()
	cancel, done, draining := d.cancel, d.done, d.draining
	d.mu.Unlock()
	if !draining {
		return d.Progress(), nil
	}
	cancel()
	select {
	case <-done:
	case <-ctx.Done():
		return d.Progress(), ctx.Err()
	}
	d.mu.Lock()
	d.draining = false
	if d.p.State == StateRunning {
		d.p.State = StateFailed
	}
	d.mu.Unlock()
	if d.o.Intake != nil {
		d.o.Intake.SetDraining(false)
	}
	d.o.Engine.Resume()
	d.o.Logger.Info("drain stopped: back in service")
	return d.Progress(), nil
}

// Wait returns when the current run has ended (or ctx), with its progress.
func (d *Drainer) Wait(ctx context.Context) (Progress, error) {
	d.mu.Lock()
	done := d.done
	d.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return d.Progress(), ctx.Err()
		}
	}
	return d.Progress(), nil
}

// Progress returns the counts so far; Left, Held and Queued are read from
// the queue's in-memory statistics.
func (d *Drainer) Progress() Progress {
	st := d.o.Store.Stats()
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.p
	p.Draining = d.draining
	p.Queued, p.Held = st.Messages, st.Held
	if p.State == StateRunning || p.State == StateFinished || p.State == StateFailed {
		p.Left = max(0, st.Messages-st.Held-d.tried)
	}
	return p
}

// count books one message's fate.
func (d *Drainer) count(drained bool, stillQueued bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if drained {
		d.p.Drained++
		return
	}
	d.p.Failed++
	if stillQueued {
		d.tried++
	}
}

// dialer is the SMTP client toward the peer: STARTTLS when offered; with
// credentials, TLS is required and the certificate verified.
func (d *Drainer) dialer(req Request) *smtpclient.Dialer {
	dl := &smtpclient.Dialer{
		Hostname: d.o.Hostname, TLS: smtpclient.TLSOpportunistic, RootCAs: d.o.RootCAs,
		ConnectTimeout: d.o.ConnectTimeout, CommandTimeout: d.o.CommandTimeout, DialContext: d.o.DialContext,
	}
	if req.Username != "" {
		sh := &smtpclient.Smarthost{Address: req.To, Username: req.Username, Password: req.Password, TLS: smtpclient.SmarthostSTARTTLS}
		if req.AllowInsecureAuth {
			sh.TLS, sh.AllowInsecureAuth = smtpclient.SmarthostNoTLS, true
		}
		dl.Smarthost = sh
	}
	return dl
}

// hopOf is the one hop every message goes to.
func hopOf(req Request) smtpclient.Hop {
	host, port, _ := net.SplitHostPort(req.To)
	return smtpclient.Hop{Host: host, Port: port, MX: req.To, Smarthost: req.Username != ""}
}
