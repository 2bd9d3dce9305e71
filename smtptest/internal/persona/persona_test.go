package persona

import (
	"strings"
	"testing"
	"time"
)

func TestBuiltinLoads(t *testing.T) {
	for _, name := range []string{"gmail", "outlook", "yahoo", "greylist", "greylist-wait", "tarpit", "flaky"} {
		if _, err := Builtin().New(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestParseRefusesWhatItCannotPlay(t *testing.T) {
	for file, want := range map[string]string{
		"x:\n  checks:\n    - {kind: rate, stage: mail, limit: \"{rate}\", reply: \"421 4.7.0 Slow\"}\n":      "parameter {rate} is not declared",
		"x:\n  checks:\n    - {kind: rate, stage: mail, limit: 5/min, reply: \"421 4.7.0 Slow\", match: a}\n": `field "match" does not belong`,
		"x:\n  checks:\n    - {kind: teleport, stage: mail}\n":                                                `unknown kind "teleport"`,
		"x:\n  checks:\n    - {kind: unknown, stage: mail, match: a, reply: \"550 5.1.1 No\"}\n":              "checked at rcpt",
		"x:\n  checks:\n    - {kind: unknown, stage: rcpt, match: a, reply: \"550 4.1.1 No\"}\n":              "class must be the reply's",
		"x:\n  checks:\n    - {kind: unknown, stage: rcpt, match: a, reply: \"250 2.0.0 Fine\"}\n":            "4xx or 5xx",
		"x:\n  source: s\n  sauce: t\n  checks: []\n":                                                         "field sauce not found",
		"Bad Name:\n  checks:\n    - {kind: tarpit, stage: mail, delay: 1s}\n":                                "lower-case",
		"x:\n  checks:\n    - {kind: tarpit, stage: mail, delay: 1s, reply: \"421 4.0.0 x\"}\n":               "no reply",
	} {
		_, err := Parse([]byte(file))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", file, err, want)
		}
	}
}

func TestParseSpec(t *testing.T) {
	sp, err := ParseSpec("gmail, rate=10/min ,unknown=nobody@*")
	if err != nil || sp.String() != "gmail,rate=10/min,unknown=nobody@*" {
		t.Fatalf("ParseSpec = %v, %v", sp, err)
	}
	for _, bad := range []string{"", "Gmail", "gmail,rate", "gmail,=1", "gmail,rate=1,rate=2", "gmail,rate=\x01"} {
		if _, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) accepted", bad)
		}
	}
}

// A refused command takes no slot: the window counts only what got through.
func TestRateRefusalTakesNoSlot(t *testing.T) {
	in, err := Builtin().NewSpec(Spec{Name: "gmail", Params: map[string]string{"rate": "2/min"}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	seen := func(d time.Duration) Seen { return Seen{Stage: StageMail, Now: t0.Add(d), IP: "192.0.2.1"} }
	for i, tc := range []struct {
		at     time.Duration
		refuse bool
	}{{0, false}, {time.Second, false}, {2 * time.Second, true}, {59 * time.Second, true}, {60 * time.Second, false}, {61 * time.Second, false}, {62 * time.Second, true}} {
		if got := in.Decide(seen(tc.at)).Code != 0; got != tc.refuse {
			t.Errorf("step %d at %v: refused %v, want %v", i, tc.at, got, tc.refuse)
		}
	}
	other := Seen{Stage: StageMail, Now: t0.Add(62 * time.Second), IP: "192.0.2.2"}
	if in.Decide(other).Code != 0 {
		t.Error("the rate is per client IP")
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"gmail", "gmail,rate=10/min", "outlook,conns=2,unknown=a*@b", "x,,", "flaky,seed=1,fraction=0.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := ParseSpec(s)
		if err != nil {
			return
		}
		again, err := ParseSpec(sp.String())
		if err != nil || again.String() != sp.String() {
			t.Fatalf("%q -> %q -> %q, %v", s, sp.String(), again.String(), err)
		}
		Builtin().NewSpec(sp) // must not panic, whatever the values
	})
}

func FuzzParseFile(f *testing.F) {
	f.Add(BuiltinYAML())
	f.Add([]byte("x:\n  params: {d: 1s}\n  checks:\n    - {kind: tarpit, stage: rcpt, delay: \"{d}\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		for name := range c {
			in, err := c.New(name)
			if err != nil {
				t.Fatalf("Parse accepted %q but New refuses it: %v", name, err)
			}
			for _, st := range []Stage{StageGreeting, StageMail, StageRcpt, StageData} {
				in.Decide(Seen{Stage: st, IP: "192.0.2.1", Rcpt: "a@b", Conns: 1})
			}
		}
	})
}
