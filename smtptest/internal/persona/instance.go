package persona

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Seen is what the server shows a persona about one command.
type Seen struct {
	Stage Stage
	Now   time.Time
	// IP is the client's address; From the transaction's sender; Rcpt the
	// recipient at rcpt.
	IP, From, Rcpt string
	// Conns is how many connections the IP has open, this one included
	// (at greeting).
	Conns int
	// Data is the message (at data).
	Data []byte
	// HasPTR, if set, says whether the client's address has a PTR record
	// whose name resolves back to it (the server looks it up when asked);
	// nil counts as yes.
	HasPTR func() bool
}

// Reply is a persona's answer: a refusal (Code 4xx or 5xx) and a delay to
// wait before replying either way. The zero value lets the command go on.
type Reply struct {
	Code     int
	Enhanced [3]int
	Text     string
	Delay    time.Duration
}

// Instance is one persona with its parameters and state.
type Instance struct {
	spec   Spec
	mu     sync.Mutex
	checks []check
}

// check is one compiled check: where it applies, what it answers and the
// state machine that decides.
type check struct {
	stage Stage
	reply replyTemplate
	impl  decider
}

// decider is a check's state machine. decide reports whether the command
// is refused and how long to wait first; commit records a command that
// went on (every check of the stage let it through).
type decider interface {
	decide(s Seen) (refuse bool, delay time.Duration)
	commit(s Seen)
}

// New makes an instance of the persona name with its default parameters.
func (c Catalog) New(name string) (*Instance, error) {
	return c.NewSpec(Spec{Name: name, Params: map[string]string{}})
}

// NewSpec makes an instance of sp, refusing a name or parameter the
// catalog does not know.
func (c Catalog) NewSpec(sp Spec) (*Instance, error) {
	def, ok := c[sp.Name]
	if !ok {
		return nil, fmt.Errorf("unknown persona %q (known: %s)", sp.Name, strings.Join(slices.Sorted(maps.Keys(c)), ", "))
	}
	params := maps.Clone(def.Params)
	if params == nil {
		params = map[string]string{}
	}
	for _, k := range slices.Sorted(maps.Keys(sp.Params)) {
		if _, ok := def.Params[k]; !ok {
			return nil, fmt.Errorf("persona %s: unknown parameter %q (it takes %s)", sp.Name, k, strings.Join(slices.Sorted(maps.Keys(def.Params)), ", "))
		}
		params[k] = sp.Params[k]
	}
	in := &Instance{spec: sp}
	for i, cd := range def.Checks {
		ch, err := compile(cd, params)
		if err != nil {
			return nil, fmt.Errorf("persona %s: check %d (%s): %w", sp.Name, i+1, cd.Kind, err)
		}
		in.checks = append(in.checks, ch)
	}
	return in, nil
}

// Name is the persona's name, as events name it: "persona:" + Name.
func (in *Instance) Name() string { return in.spec.Name }

// Spec returns the spec the instance was made from.
func (in *Instance) Spec() Spec { return in.spec }

// Decide answers one command: the first refusing check at s.Stage wins,
// delays of the checks before it add up. A command that goes on is
// committed to every check of the stage.
func (in *Instance) Decide(s Seen) Reply {
	in.mu.Lock()
	defer in.mu.Unlock()
	var r Reply
	for _, ch := range in.checks {
		if ch.stage != s.Stage {
			continue
		}
		refuse, delay := ch.impl.decide(s)
		r.Delay += delay
		if refuse {
			wait := delay
			if g, ok := ch.impl.(*greyCheck); ok {
				wait = g.remaining(s)
			}
			code, enh, text := ch.reply.fill(s, wait)
			r.Code, r.Enhanced, r.Text = code, enh, text
			r.Delay -= delay // a refusal's own "delay" is its wait, not a pause
			return r
		}
	}
	for _, ch := range in.checks {
		if ch.stage == s.Stage {
			ch.impl.commit(s)
		}
	}
	return r
}

// replyTemplate is a reply with {ip}, {rcpt}, {wait} and {domain} (the
// From: field's, at data) to fill in.
type replyTemplate struct {
	code int
	enh  [3]int
	text string
}

func parseReply(s string) (replyTemplate, error) {
	var t replyTemplate
	code, rest, _ := strings.Cut(strings.TrimSpace(s), " ")
	n, err := strconv.Atoi(code)
	if err != nil || n < 400 || n > 599 || len(code) != 3 {
		return t, fmt.Errorf("reply %q: want a 4xx or 5xx code first", s)
	}
	t.code = n
	enh, text, _ := strings.Cut(rest, " ")
	parts := strings.Split(enh, ".")
	if len(parts) != 3 {
		return t, fmt.Errorf("reply %q: want an enhanced code after the code, e.g. 4.7.28", s)
	}
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > 999 {
			return t, fmt.Errorf("reply %q: bad enhanced code %q", s, enh)
		}
		t.enh[i] = v
	}
	if t.enh[0] != n/100 {
		return t, fmt.Errorf("reply %q: the enhanced code's class must be the reply's (RFC 3463)", s)
	}
	if hasControl(text) {
		return t, fmt.Errorf("reply %q: control characters in the text", s)
	}
	t.text = strings.TrimSpace(text)
	return t, nil
}

func (t replyTemplate) fill(s Seen, wait time.Duration) (int, [3]int, string) {
	secs := int((wait + time.Second - 1) / time.Second)
	r := strings.NewReplacer("{ip}", s.IP, "{rcpt}", s.Rcpt, "{wait}", strconv.Itoa(secs), "{domain}", fromDomain(s.Data))
	text := r.Replace(t.text)
	return t.code, t.enh, text
}
