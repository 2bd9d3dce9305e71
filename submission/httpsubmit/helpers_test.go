package httpsubmit

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
	"github.com/relayq/relayq/submission"
)

// testEnv is the whole path: HTTP API → submission.Acceptor → queue file →
// delivery engine → an smtptest next hop.
type testEnv struct {
	url    string
	client *http.Client
	store  *queue.Store
	mx     *smtptest.Server
	srv    *Server
	sub    *submission.Server
	obs    *counter
}

// counter counts the submission server's acceptances.
type counter struct{ accepted atomic.Int64 }

func (c *counter) SessionOpened()                   {}
func (c *counter) SessionClosed()                   {}
func (c *counter) Accepted(int64)                   { c.accepted.Add(1) }
func (c *counter) Rejected(submission.RejectReason) {}

type envOpts struct {
	trusted  bool // 127.0.0.0/8 may relay without credentials
	users    []submission.User
	keys     []submission.APIKey
	maxBytes int64
	maxRcpts int
	insecure bool
	// authMax is the AUTH failures before a lockout (default 100).
	authMax int
	// tls serves HTTPS with a fresh certificate; the env's client trusts it.
	tls bool
	// signer is the submission server's Signer (DKIM), or nil.
	signer func(submission.KeyFilter) submission.MessageSigner
	// suppressions is the submission server's suppression check, or nil.
	suppressions submission.Suppressions
	// tenants is the policy's tenant directory, or nil.
	tenants submission.Tenants
	// clock times the submission server's AUTH lockouts (nil: real time).
	clock clock.Clock
	// maxPerIP is the submission server's MaxConnsPerIP (0: its default).
	maxPerIP int
	// idemWindow is the submission server's IdempotencyWindow; storeClock
	// the queue's clock, which expires keys (nil: real time).
	idemWindow time.Duration
	storeClock clock.Clock
	// maxHold is the submission server's MaxHold (send_at).
	maxHold time.Duration
	// sesKeys are the API's SES access keys; httpClock its clock.
	sesKeys   []SESKey
	httpClock clock.Clock
	// preflight is the submission server's Preflight hook, or nil.
	preflight submission.Preflight
}

func start(t *testing.T, o envOpts) *testEnv {
	t.Helper()
	mx := smtptest.NewServer(t, smtptest.Reply("rcpt:refused@=550 5.1.1 No such user"))
	st, err := queue.Open(filepath.Join(t.TempDir(), "q.db"), queue.Options{Clock: o.storeClock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := delivery.New(delivery.Options{
		Store:   st,
		Router:  route.NewRouter(route.Options{Routes: map[string]string{"*": mx.Addr()}}),
		Courier: &smtpclient.Dialer{Hostname: "relay.test", TLS: smtpclient.TLSNone},
		Policy:  queue.Policy{Backoff: queue.Backoff{Initial: time.Hour, Multiplier: 2, Max: time.Hour}},
		Logger:  log,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { eng.Run(ctx, time.Second); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	if o.authMax == 0 {
		o.authMax = 100
	}
	p := submission.Policy{Users: o.users, APIKeys: o.keys, Tenants: o.tenants}
	if o.trusted {
		p.Trusted = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}
	obs := &counter{}
	client := &http.Client{Timeout: 30 * time.Second}
	var tlsConf *tls.Config
	scheme := "http://"
	if o.tls {
		c, err := smtptest.NewCert()
		if err != nil {
			t.Fatal(err)
		}
		tlsConf, scheme = &tls.Config{Certificates: []tls.Certificate{c.TLS}}, "https://"
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.Pool}}
	}
	sub, err := submission.New(submission.Options{TLS: tlsConf,
		Hostname: "relay.test", Queue: st, Policy: p, Logger: log,
		MaxMessageBytes: o.maxBytes, MaxRecipients: o.maxRcpts,
		AllowInsecureAuth: o.insecure, AuthFailureDelay: -1, AuthMaxFailures: o.authMax,
		OnQueued: eng.Enqueue, BeforeCommit: eng.ClaimFirst, Observer: obs,
		Signer: o.signer, Suppressions: o.suppressions, Clock: o.clock, MaxConnsPerIP: o.maxPerIP,
		IdempotencyWindow: o.idemWindow, MaxHold: o.maxHold, Preflight: o.preflight,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Options{Acceptor: sub.Acceptor(), Logger: log, SESKeys: o.sesKeys, Clock: o.httpClock})
	addr, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &testEnv{url: scheme + addr.String() + Path, client: client, store: st, mx: mx, srv: srv, sub: sub, obs: obs}
}

// response is a decoded API answer.
type response struct {
	status int
	header http.Header
	ok     accepted
	err    apiError
}

// answer is a reply as it came, body unread by anything.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// send posts body to the API with query appended, and headers given as
// name, value pairs (an empty value is not sent).
func (e *testEnv) send(t *testing.T, query, ctype string, body io.Reader, headers ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+query, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] != "" {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

func (e *testEnv) post(t *testing.T, query, ctype, auth string, body []byte) response {
	t.Helper()
	a := e.send(t, query, ctype, bytes.NewReader(body), "Authorization", auth)
	r := response{status: a.status, header: a.header}
	var err error
	if a.status == http.StatusAccepted {
		err = json.Unmarshal(a.body, &r.ok)
	} else if a.header.Get("Content-Type") == "application/json" {
		err = json.Unmarshal(a.body, &r.err)
	}
	if err != nil {
		t.Fatalf("status %d, body %q: %v", a.status, a.body, err)
	}
	return r
}

func postJSON(t *testing.T, e *testEnv, auth string, m any) response {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return e.post(t, "", "application/json", auth, b)
}

func bcryptHash(t *testing.T, secret string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(secret), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// withoutReceived drops the relay's own Received header (the first field).
func withoutReceived(t *testing.T, data []byte) []byte {
	t.Helper()
	if !bytes.HasPrefix(data, []byte("Received: ")) {
		t.Fatalf("delivered message does not start with Received: %q", data)
	}
	i := 0
	for {
		j := bytes.Index(data[i:], []byte("\r\n"))
		if j < 0 {
			t.Fatalf("unterminated header in %q", data)
		}
		i += j + 2
		if i >= len(data) || (data[i] != ' ' && data[i] != '\t') {
			return data[i:]
		}
	}
}
