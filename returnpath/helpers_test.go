package returnpath

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
	"github.com/relayq/relayq/returnpath/verp"
	"github.com/relayq/relayq/submission"
)

// listener is a bounce listener on loopback over a real queue file with
// one delivered message from app@example.org to three recipients.
type listener struct {
	t      *testing.T
	store  *queue.Store
	signer *verp.Signer
	rec    *Recorder
	addr   string
	id     string
	fwd    *forwards
}

type forwards struct {
	mu   sync.Mutex
	to   []string
	body [][]byte
	all  []Forwarded
}

func (f *forwards) add(_ context.Context, fw Forwarded) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.to, f.body, f.all = append(f.to, fw.To), append(f.body, fw.Report), append(f.all, fw)
	return nil
}

var rcpts = []string{"gone@example.net", "annoyed@yahoo.com", "slow@example.net"}

func newListener(t *testing.T) *listener {
	t.Helper()
	return newListenerWith(t, nil)
}

// newListenerWith is newListener with its Recorder's options changed by
// opt (limits, a clock) first.
func newListenerWith(t *testing.T, opt func(*Options)) *listener {
	t.Helper()
	st := queuetest.NewStore(t, nil)
	d := st.NewDraft()
	d.Write([]byte("From: app@example.org\r\nMessage-ID: <order-42@app.example.org>\r\nSubject: Your order\r\n\r\nThanks.\r\n"))
	env := queue.Envelope{From: "app@example.org", MessageID: "<order-42@app.example.org>"}
	var outs []queue.Outcome
	for _, a := range rcpts {
		env.Recipients = append(env.Recipients, queue.Recipient{Address: a})
		outs = append(outs, queue.Outcome{Address: a, Status: queue.StatusDelivered, Reply: "250 2.0.0 ok"})
	}
	if err := d.Commit(env); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Record(d.ID(), outs); err != nil {
		t.Fatal(err)
	}
	signer, err := verp.New("bounces.example.org", []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{t: t, store: st, signer: signer, id: d.ID(), fwd: &forwards{}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	fbl := []FeedbackLoop{{Senders: []string{"feedbackloop@yahoo.com", "staff@hotmail.com", "@isp.example"}},
		{Address: "fbl@bounces.example.org", Senders: []string{"fbl@provider.example"}, ForwardTo: "abuse-desk@app.example.org"}}
	o := Options{Store: st, Signer: signer, Logger: quiet, Forward: l.fwd.add, FeedbackLoops: fbl,
		Suppression: &suppression.List{Store: st.Suppressions(), Config: suppression.Config{Auto: true}}}
	if opt != nil {
		opt(&o)
	}
	l.rec, err = NewRecorder(o)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(submission.Options{Queue: st, Hostname: "bounces.example.org", Logger: quiet,
		MaxMessageBytes: 1 << 20, Policy: submission.Policy{Users: []submission.User{{Username: "u", PasswordHash: "x"}}}}, l.rec)
	if err != nil {
		t.Fatal(err)
	}
	a, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	l.addr = a.String()
	return l
}

// verpFor is the signed sender relayq used for recipient i.
func (l *listener) verpFor(i int) string {
	a, err := l.signer.Address(l.id, i)
	if err != nil {
		l.t.Fatal(err)
	}
	return a
}

// sample reads a testdata report with CRLF line ends, as it travels.
func sample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "returnpath", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n", "\r\n")
}

// send runs one SMTP transaction and returns the first refusal.
func (l *listener) send(from, to, body string) error {
	l.t.Helper()
	c, err := smtp.Dial(l.addr)
	if err != nil {
		l.t.Fatal(err)
	}
	defer c.Close()
	_ = c.Hello("mx.example.net")
	return c.SendMail(from, []string{to}, strings.NewReader(body))
}

// events are the async events the reports recorded.
// wantNothingRecorded fails the test if what was sent (named by who)
// recorded an event or suppressed the first recipient.
func (l *listener) wantNothingRecorded(t *testing.T, who string) {
	t.Helper()
	if evs := l.events(); len(evs) != 0 {
		t.Errorf("%s recorded %+v", who, evs)
	}
	if _, listed, _ := l.store.Suppressions().Get(rcpts[0]); listed {
		t.Errorf("%s suppressed the recipient", who)
	}
}

func (l *listener) events() []queue.Event {
	l.t.Helper()
	evs, _, err := l.store.Events().List(queue.EventQuery{Types: []queue.EventType{queue.EventDelivered, queue.EventBounced, queue.EventDelayed, queue.EventComplained, queue.EventAutoReplied}})
	if err != nil {
		l.t.Fatal(err)
	}
	return slices.DeleteFunc(evs, func(e queue.Event) bool { return !e.Async }) // the reports' only
}

func smtpCode(err error) int {
	if se, ok := err.(*smtp.SMTPError); ok {
		return se.Code
	}
	return 0
}
