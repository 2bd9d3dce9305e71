package persona

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Spec is a persona as --persona names it: "gmail,rate=10/min".
type Spec struct {
	Name   string
	Params map[string]string
}

// ParseSpec parses NAME[,KEY=VALUE...]. It checks only the syntax; the
// catalog checks the name and keys (Catalog.NewSpec).
func ParseSpec(s string) (Spec, error) {
	parts := strings.Split(s, ",")
	sp := Spec{Name: strings.TrimSpace(parts[0]), Params: map[string]string{}}
	if !nameRE.MatchString(sp.Name) {
		return sp, fmt.Errorf("persona name %q: want lower-case letters, digits and '-', e.g. gmail", sp.Name)
	}
	for _, kv := range parts[1:] {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return sp, fmt.Errorf("%q: want KEY=VALUE", kv)
		}
		if _, dup := sp.Params[k]; dup {
			return sp, fmt.Errorf("%s given twice", k)
		}
		if hasControl(v) {
			return sp, errors.New("control characters in a value")
		}
		sp.Params[k] = strings.TrimSpace(v)
	}
	return sp, nil
}

// String renders sp as ParseSpec reads it, keys sorted.
func (sp Spec) String() string {
	var b strings.Builder
	b.WriteString(sp.Name)
	for _, k := range slices.Sorted(maps.Keys(sp.Params)) {
		fmt.Fprintf(&b, ",%s=%s", k, sp.Params[k])
	}
	return b.String()
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}
