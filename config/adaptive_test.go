package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
)

// The shaping.adaptive keys and the per-entry adaptive: false reach the
// shaping configuration; a `slow` rule needs no duration.
func TestAdaptiveKeys(t *testing.T) {
	c, _, err := loadWith(t, `
shaping:
  adaptive:
    decrease: 0.7
    increase: 0.2
    increase_after: 30s
    hold: 5s
    floor: "6/min"
    forget_after: 2h
  providers:
    - {name: google, mx_suffixes: [".google.com"], max_message_rate: "600/min", adaptive: false}
  domains:
    example.net: {adaptive: false}
  rules:
    - {match: '4\.7\.28|rate limit', action: slow, scope: provider}
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := c.Shaping.Adaptive
	want := shaping.Adaptive{Enabled: true, Decrease: 0.7, Increase: 0.2, IncreaseAfter: 30 * time.Second, Hold: 5 * time.Second,
		Floor: shaping.Rate{N: 6, Per: time.Minute}, ForgetAfter: 2 * time.Hour}
	off := a.Off
	a.Off = nil
	if !reflect.DeepEqual(a, want) {
		t.Errorf("adaptive = %+v, want %+v", a, want)
	}
	if !off[shaping.Scope{Kind: shaping.ScopeProvider, Name: "google"}] || !off[shaping.Scope{Kind: shaping.ScopeDomain, Name: "example.net"}] || len(off) != 2 {
		t.Errorf("scopes off = %v, want provider:google and domain:example.net", off)
	}
	if r := c.Shaping.Rules[0]; r.Action != shaping.ActionSlow {
		t.Errorf("rule action = %v, want slow", r.Action)
	}
	if _, err := shaping.NewPolicy(c.Shaping); err != nil {
		t.Errorf("NewPolicy: %v", err)
	}
}

// A bad value is an error naming the key and the file (or the variable).
func TestAdaptiveRejectsBadValues(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"decrease of 1", "shaping:\n  adaptive:\n    decrease: 1\n", `shaping.adaptive.decrease: 1 must be more than 0 and less than 1`},
		{"no increase", "shaping:\n  adaptive:\n    increase: 0\n", `shaping.adaptive.increase: 0 must be more than 0`},
		{"no floor", "shaping:\n  adaptive:\n    floor: \"\"\n", `shaping.adaptive.floor: empty; a learned rate needs a floor such as "1/min"`},
		{"bad floor", "shaping:\n  adaptive:\n    floor: slow\n", `shaping.adaptive.floor: "slow" is not a rate`},
		{"entry flag not a bool", "shaping:\n  domains:\n    example.net: {adaptive: maybe}\n", `shaping.domains.example.net.adaptive: "maybe" is not true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, path, err := loadWith(t, tt.file, nil)
			if err == nil {
				t.Fatal("Load succeeded; want an error")
			}
			if want := "config " + path + ": " + tt.want; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error\n got: %s\nwant: %s", err, want)
			}
		})
	}
	// Turned off, the other values are not checked.
	if _, _, err := loadWith(t, "shaping:\n  adaptive:\n    enabled: false\n    decrease: 2\n", nil); err != nil {
		t.Errorf("adaptive off with decrease 2: %v", err)
	}
	_, _, err := loadWith(t, "", map[string]string{"RELAYQ_SHAPING_ADAPTIVE_DECREASE": "0"})
	if want := "environment RELAYQ_SHAPING_ADAPTIVE_DECREASE: 0 must be more than 0"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want %s", err, want)
	}
}
