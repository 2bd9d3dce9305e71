package smtptest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/smtptest/internal/persona"
)

// fileReply is a check's reply as personas.yaml writes it, read here with
// yaml directly so the test does not trust the package under test.
func fileReplies(t *testing.T) map[string][]map[string]string {
	t.Helper()
	var f map[string]struct {
		Checks []map[string]string `yaml:"checks"`
	}
	if err := yaml.Unmarshal(persona.BuiltinYAML(), &f); err != nil {
		t.Fatal(err)
	}
	out := map[string][]map[string]string{}
	for name, d := range f {
		out[name] = d.Checks
	}
	return out
}

// param is the parameter a check's field names: "{rate}" gives "rate".
func param(check map[string]string, field string) string {
	return strings.Trim(check[field], "{}")
}

// provoke drives srv into the check and returns the reply it got.
func provoke(t *testing.T, srv *Server, kind string) error {
	t.Helper()
	switch persona.Kind(kind) {
	case persona.KindRate:
		send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, testBody) // the one message allowed
		return send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, testBody)
	case persona.KindConns:
		dial(t, srv.Addr()) // holds the one connection allowed open
		srv.WaitFor(t, waitTimeout, func() bool { return srv.Connections() == 1 && srv.EventCount() >= 1 })
		c := dial(t, srv.Addr())
		return c.Hello("client.test") // the greeting is read here
	case persona.KindUnknown:
		return send(t, srv.Addr(), "a@src.test", []string{"nobody@dst.test"}, testBody)
	case persona.KindUnaligned:
		return send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, "From: a@src.test\r\n"+testBody)
	case persona.KindOneClick: // signed (not verified) by its own domain, so only one-click is missing
		return send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, "DKIM-Signature: v=1; d=src.test; s=s1; b=x\r\nFrom: a@src.test\r\n"+testBody)
	case persona.KindPTR:
		srv.lookupAddr = func(context.Context, string) ([]string, error) { return nil, errors.New("no PTR") }
	}
	return send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, testBody) // unsigned, greylist, flaky
}

// overrides is the spec that makes a check of kind answer at once.
func overrides(name string, check map[string]string) string {
	switch persona.Kind(check["kind"]) {
	case persona.KindRate:
		return fmt.Sprintf("%s,%s=1/min", name, param(check, "limit"))
	case persona.KindConns:
		return fmt.Sprintf("%s,%s=1", name, param(check, "limit"))
	case persona.KindUnknown:
		return fmt.Sprintf("%s,%s=nobody@*", name, param(check, "match"))
	case persona.KindUnsigned:
		return fmt.Sprintf("%s,%s=true", name, param(check, "when"))
	case persona.KindFlaky:
		return fmt.Sprintf("%s,%s=1", name, param(check, "fraction"))
	case persona.KindUnaligned, persona.KindOneClick:
		return fmt.Sprintf("%s,%s=1/24h", name, param(check, "bulk"))
	case persona.KindPTR:
		return fmt.Sprintf("%s,%s=true", name, param(check, "when"))
	}
	return name
}

// Every reply a built-in persona gives is the text its file quotes from
// the provider, and is recorded as decided by persona:NAME.
func TestPersonaRepliesAreTheFilesTexts(t *testing.T) {
	tested := 0
	for name, checks := range fileReplies(t) {
		for i, check := range checks {
			if check["kind"] == string(persona.KindTarpit) {
				continue // waits, never replies
			}
			t.Run(fmt.Sprintf("%s/%d-%s", name, i+1, check["kind"]), func(t *testing.T) {
				clk := newFakeClock()
				srv := NewServer(t, WithClock(clk.Now), Persona(overrides(name, check)))
				err := provoke(t, srv, check["kind"])
				code, enh, text := splitReply(t, check["reply"])
				text = strings.NewReplacer("{ip}", "127.0.0.1", "{rcpt}", "b@dst.test", "{wait}", "300", "{domain}", "src.test").Replace(text)
				wantCode(t, err, code, enh, text)
				if se := err.(*smtp.SMTPError); se.Message != text {
					t.Fatalf("text %q, want the file's %q", se.Message, text)
				}
				last := lastRefusal(srv.Events())
				if last.By != ByPersona(name) || last.Reply != fmt.Sprintf("%d %d.%d.%d %s", code, enh[0], enh[1], enh[2], text) {
					t.Fatalf("event %+v, want by persona:%s with the file's reply", last, name)
				}
			})
			tested++
		}
	}
	if tested < 9 {
		t.Fatalf("only %d checks with replies in the file", tested)
	}
}

func splitReply(t *testing.T, s string) (int, smtp.EnhancedCode, string) {
	t.Helper()
	f := strings.SplitN(s, " ", 3)
	var code int
	var enh smtp.EnhancedCode
	if len(f) != 3 {
		t.Fatalf("reply %q in the file: want CODE ENH TEXT", s)
	}
	if _, err := fmt.Sscanf(f[0]+" "+f[1], "%d %d.%d.%d", &code, &enh[0], &enh[1], &enh[2]); err != nil {
		t.Fatalf("reply %q in the file: %v", s, err)
	}
	return code, enh, f[2]
}

func lastRefusal(events []Event) Event {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Refused() {
			return events[i]
		}
	}
	return Event{}
}
