package jsonkeys

import (
	"encoding/json"
	"strings"
	"testing"
)

// duplicateKey never panics, finds nothing in JSON that encoding/json
// wrote from a map (its names are distinct), and what it finds is a name
// the input holds.
func FuzzDuplicate(f *testing.F) {
	f.Add(`{"a": 1, "a": 2}`)
	f.Add(`{"a": [{"b": 1}, {"b": 2}], "c": {"d": {"e": null, "E": 1}}}`)
	f.Add(`[1, {"x": [], "y": {}}, "z"]`)
	f.Add(`{"a":`)
	f.Add("{\"\x80\":0,\"\x80\"")
	f.Add("{\"\x80\x80\":0,\"\x80\x80\"")
	f.Fuzz(func(t *testing.T, in string) {
		// A name is decoded with each invalid byte replaced by U+FFFD, so it
		// is looked for in the input so replaced (strings.Map does that).
		valid := strings.Map(func(r rune) rune { return r }, in)
		if k := Duplicate([]byte(in)); k != "" && !strings.Contains(valid, k) {
			t.Fatalf("duplicate %q is not in the input", k)
		}
		var v any
		if json.Unmarshal([]byte(in), &v) != nil {
			return
		}
		out, err := json.Marshal(lowerKeys(v))
		if err != nil {
			t.Fatal(err)
		}
		if k := Duplicate(out); k != "" {
			t.Fatalf("duplicate %q in %s", k, out)
		}
	})
}

// lowerKeys folds object names to lower case, merging those that differ
// only in case, so that the result has no duplicates as Duplicate sees them.
func lowerKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			m[strings.ToLower(k)] = lowerKeys(e)
		}
		return m
	case []any:
		for i := range x {
			x[i] = lowerKeys(x[i])
		}
	}
	return v
}
