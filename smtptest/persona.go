package smtptest

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/smtptest/internal/persona"
)

// ByPersona is the Event.By of a reply a persona decided: "persona:gmail".
func ByPersona(name string) Answerer { return Answerer("persona:" + name) }

// PersonaFile adds the personas of a YAML file in the format of the
// embedded personas.yaml (see docs/fakemx.md); one of the same name
// replaces the built-in one.
func PersonaFile(path string) Option {
	return func(c *Config) error { c.PersonaFiles = append(c.PersonaFiles, path); return nil }
}

// Persona plays a provider: spec is NAME[,KEY=VALUE...], e.g.
// "gmail,rate=10/min" or "outlook,conns=2".
func Persona(spec string) Option {
	return func(c *Config) error {
		sp, err := persona.ParseSpec(spec)
		c.Personas = append(c.Personas, sp.String())
		return err
	}
}

// loadPersonas reads the built-in personas and the files.
func loadPersonas(files []string) (persona.Catalog, error) {
	cat := persona.Builtin()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("smtptest: persona file: %w", err)
		}
		more, err := persona.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("smtptest: %s: %w", f, err)
		}
		cat = cat.Merge(more)
	}
	return cat, nil
}

// PersonaClient is the option every persona takes besides its own: with
// "gmail,client=127.0.0.3" the persona answers only that client IP (the
// others are served as if it were absent), so one source address of a
// relay can be throttled or block-listed while its others are not.
const PersonaClient = "client"

// scriptPersona is a compiled persona and the one client IP it answers
// ("" for all).
type scriptPersona struct {
	*persona.Instance
	client string
}

// compilePersonas makes an instance of each spec, with fresh state.
func compilePersonas(cat persona.Catalog, specs []string) ([]scriptPersona, error) {
	var out []scriptPersona
	for _, s := range specs {
		sp, err := persona.ParseSpec(s)
		if err != nil {
			return nil, fmt.Errorf("--%s %q: %w", FlagPersona, s, err)
		}
		client, ok := sp.Params[PersonaClient]
		if ok && net.ParseIP(client) == nil {
			return nil, fmt.Errorf("--%s %q: %s=%q: want an IP address", FlagPersona, s, PersonaClient, client)
		}
		delete(sp.Params, PersonaClient)
		in, err := cat.NewSpec(sp)
		if err != nil {
			return nil, fmt.Errorf("--%s %q: %w", FlagPersona, s, err)
		}
		out = append(out, scriptPersona{in, client})
	}
	return out, nil
}

// askPersonas shows the command to each persona in turn and returns the
// first refusal, after waiting the delays they asked for. It reports
// false when the server closed during a delay.
func (s *Server) askPersonas(st *scriptState, seen persona.Seen) (*smtp.SMTPError, Answerer, bool) {
	for _, in := range st.personas {
		if in.client != "" && in.client != seen.IP {
			continue
		}
		r := in.Decide(seen)
		if r.Delay > 0 && !s.pause(r.Delay) {
			return nil, "", false
		}
		if r.Code >= 400 {
			e := &smtp.SMTPError{Code: r.Code, EnhancedCode: smtp.EnhancedCode(r.Enhanced), Message: r.Text}
			return e, ByPersona(in.Name()), true
		}
	}
	return nil, "", true
}

// seenAt is what a persona is shown of a command at stage.
func (s *Server) seenAt(stage Stage, ip string) persona.Seen {
	return persona.Seen{Stage: persona.Stage(stage), Now: s.now(), IP: ip}
}

// ptrTimeout bounds the reverse lookup a persona's ptr check asks for.
const ptrTimeout = 5 * time.Second

// hasPTR reports whether the client's address has a PTR record (the
// system resolver, /etc/hosts included), looked up once per session and
// only when a persona asks.
func (ss *session) hasPTR() bool {
	if ss.ptr == nil {
		ctx, cancel := context.WithTimeout(context.Background(), ptrTimeout)
		lookup := ss.srv.lookupAddr
		if lookup == nil {
			lookup = net.DefaultResolver.LookupAddr
		}
		names, err := lookup(ctx, ss.ip)
		cancel()
		has := err == nil && len(names) > 0
		ss.ptr = &has
	}
	return *ss.ptr
}
