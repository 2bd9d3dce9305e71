package persona

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// compile turns a check's definition, its {param} fields filled in, into
// a check.
func compile(cd CheckDef, params map[string]string) (check, error) {
	ch := check{stage: cd.Stage}
	switch cd.Stage {
	case StageGreeting, StageMail, StageRcpt, StageData:
	default:
		return ch, fmt.Errorf("unknown stage %q (want greeting, mail, rcpt or data)", cd.Stage)
	}
	fields, err := fill(cd, params)
	if err != nil {
		return ch, err
	}
	if cd.Kind != KindTarpit {
		if ch.reply, err = parseReply(cd.Reply); err != nil {
			return ch, err
		}
	} else if cd.Reply != "" {
		return ch, errors.New("a tarpit only waits; it has no reply")
	}
	ch.impl, err = newDecider(cd.Kind, cd.Stage, fields)
	return ch, err
}

// fill checks cd's fields against its kind and replaces {param} values.
func fill(cd CheckDef, params map[string]string) (map[string]string, error) {
	want, ok := kindFields[cd.Kind]
	if !ok {
		return nil, fmt.Errorf("unknown kind %q", cd.Kind)
	}
	out := map[string]string{}
	for _, f := range want {
		name, optional := strings.CutSuffix(f, "?")
		v, ok := cd.Fields[name]
		if !ok && !optional {
			return nil, fmt.Errorf("missing field %q", name)
		}
		if p, isParam := strings.CutPrefix(v, "{"); isParam && strings.HasSuffix(p, "}") {
			pv, ok := params[strings.TrimSuffix(p, "}")]
			if !ok {
				return nil, fmt.Errorf("field %s: parameter %s is not declared in params", name, v)
			}
			v = pv
		}
		out[name] = v
	}
	for name := range cd.Fields {
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("field %q does not belong to a %s check", name, cd.Kind)
		}
	}
	return out, nil
}

func newDecider(kind Kind, stage Stage, f map[string]string) (decider, error) {
	switch kind {
	case KindRate:
		n, window, err := parseLimit(f["limit"])
		if err != nil {
			return nil, err
		}
		var cool time.Duration
		if v := f["cooldown"]; v != "" {
			if cool, err = time.ParseDuration(v); err != nil || cool < 0 {
				return nil, fmt.Errorf("cooldown %q: want a duration", v)
			}
		}
		return &rateCheck{limit: n, window: window, cooldown: cool, seen: map[string][]time.Time{}, blocked: map[string]time.Time{}}, nil
	case KindConns:
		n, err := strconv.Atoi(f["limit"])
		if err != nil || n < 1 || stage != StageGreeting {
			return nil, fmt.Errorf("conns: want a limit from 1, at greeting")
		}
		return connsCheck{limit: n}, nil
	case KindUnknown:
		if stage != StageRcpt {
			return nil, errors.New("unknown users are checked at rcpt")
		}
		return unknownCheck{match: strings.ToLower(f["match"])}, nil
	case KindUnsigned:
		on, err := strconv.ParseBool(f["when"])
		if err != nil || stage != StageData {
			return nil, fmt.Errorf("unsigned: want when true or false, at data")
		}
		return unsignedCheck{on: on}, nil
	case KindUnaligned, KindOneClick, KindPTR:
		return newBulkCheck(kind, stage, f)
	case KindGreylist:
		d, err := time.ParseDuration(f["delay"])
		if err != nil || d <= 0 || stage != StageRcpt {
			return nil, fmt.Errorf("greylist: want a positive delay, at rcpt")
		}
		return &greyCheck{delay: d, first: map[string]time.Time{}}, nil
	case KindFlaky:
		fr, err1 := strconv.ParseFloat(f["fraction"], 64)
		seed, err2 := strconv.ParseUint(f["seed"], 10, 64)
		if err1 != nil || err2 != nil || fr < 0 || fr > 1 {
			return nil, errors.New("flaky: want a fraction from 0 to 1 and a seed (a number)")
		}
		return &flakyCheck{fraction: fr, rng: rand.New(rand.NewPCG(seed, seed))}, nil
	}
	d, err := time.ParseDuration(f["delay"]) // KindTarpit
	if err != nil || d < 0 || d > time.Hour {
		return nil, errors.New("tarpit: want a delay from 0s to 1h")
	}
	return tarpitCheck{delay: d}, nil
}

// parseLimit parses "N/PERIOD": PERIOD is s, min, h, d or a duration.
func parseLimit(s string) (int, time.Duration, error) {
	ns, per, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(ns)
	if !ok || err != nil || n < 1 || n > 1_000_000 {
		return 0, 0, fmt.Errorf("rate %q: want N/PERIOD, e.g. 10/min", s)
	}
	units := map[string]time.Duration{"s": time.Second, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	d, ok := units[per]
	if !ok {
		if d, err = time.ParseDuration(per); err != nil || d <= 0 || d > 7*24*time.Hour {
			return 0, 0, fmt.Errorf("rate %q: period %q: want s, min, h, d or a duration up to a week", s, per)
		}
	}
	return n, d, nil
}

// rateCheck counts the commands each IP got through in a sliding window
// and refuses beyond the limit; with a cool-down, once over it refuses
// everything from the IP until the cool-down has passed (Yahoo's TSS04).
type rateCheck struct {
	limit    int
	window   time.Duration
	cooldown time.Duration
	seen     map[string][]time.Time
	blocked  map[string]time.Time
}

func (c *rateCheck) decide(s Seen) (bool, time.Duration) {
	if until, ok := c.blocked[s.IP]; ok {
		if s.Now.Before(until) {
			return true, 0
		}
		delete(c.blocked, s.IP)
		delete(c.seen, s.IP)
	}
	times := c.seen[s.IP]
	for len(times) > 0 && !s.Now.Before(times[0].Add(c.window)) {
		times = times[1:]
	}
	c.seen[s.IP] = times
	if len(times) < c.limit {
		return false, 0
	}
	if c.cooldown > 0 {
		c.blocked[s.IP] = s.Now.Add(c.cooldown)
	}
	return true, 0
}

func (c *rateCheck) commit(s Seen) { c.seen[s.IP] = append(c.seen[s.IP], s.Now) }

type connsCheck struct{ limit int }

func (c connsCheck) decide(s Seen) (bool, time.Duration) { return s.Conns > c.limit, 0 }
func (connsCheck) commit(Seen)                           {}

type unknownCheck struct{ match string }

func (c unknownCheck) decide(s Seen) (bool, time.Duration) {
	return c.match != "" && glob(c.match, strings.ToLower(s.Rcpt)), 0
}
func (unknownCheck) commit(Seen) {}

// unsignedCheck refuses mail without a DKIM-Signature header field (RFC
// 6376 section 3.5); it does not verify the signature.
type unsignedCheck struct{ on bool }

func (c unsignedCheck) decide(s Seen) (bool, time.Duration) {
	return c.on && !hasHeader(s.Data, "dkim-signature"), 0
}
func (unsignedCheck) commit(Seen) {}

// greyCheck defers each new (IP, sender, recipient) triplet until delay
// has passed since it was first seen (RFC 6647).
type greyCheck struct {
	delay time.Duration
	first map[string]time.Time
}

func (c *greyCheck) key(s Seen) string {
	return s.IP + "\x00" + strings.ToLower(s.From) + "\x00" + strings.ToLower(s.Rcpt)
}

func (c *greyCheck) decide(s Seen) (bool, time.Duration) {
	first, ok := c.first[c.key(s)]
	if !ok {
		c.first[c.key(s)] = s.Now
		return true, 0
	}
	return s.Now.Before(first.Add(c.delay)), 0
}

func (c *greyCheck) remaining(s Seen) time.Duration { return c.first[c.key(s)].Add(c.delay).Sub(s.Now) }
func (*greyCheck) commit(Seen)                      {}

// flakyCheck refuses a seeded, reproducible share of commands.
type flakyCheck struct {
	fraction float64
	rng      *rand.Rand
}

func (c *flakyCheck) decide(Seen) (bool, time.Duration) { return c.rng.Float64() < c.fraction, 0 }
func (*flakyCheck) commit(Seen)                         {}

type tarpitCheck struct{ delay time.Duration }

func (c tarpitCheck) decide(Seen) (bool, time.Duration) { return false, c.delay }
func (tarpitCheck) commit(Seen)                         {}

// glob matches s against pattern, where '*' stands for any text.
func glob(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return len(s) >= len(parts[len(parts)-1]) && strings.HasSuffix(s, parts[len(parts)-1])
}

// hasHeader reports whether the header section of data has a field name.
func hasHeader(data []byte, name string) bool {
	for _, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 {
			return false
		}
		if k, _, ok := bytes.Cut(line, []byte(":")); ok && strings.EqualFold(string(k), name) {
			return true
		}
	}
	return false
}
