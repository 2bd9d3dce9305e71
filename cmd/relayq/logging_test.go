package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/relayq/relayq/config"
	"strings"
	"testing"
)

// jsonKeys parses one JSON log line and returns its top-level keys in
// order, failing on a key given twice (which encoding/json would accept).
func jsonKeys(t *testing.T, line string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %q", line)
	}
	var keys []string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		k := tok.(string)
		if seen[k] {
			t.Errorf("key %q twice in %s", k, line)
		}
		seen[k] = true
		keys = append(keys, k)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
	}
	return keys
}

// One msg per line: an attribute named msg (go-smtp's error log used one)
// is renamed, in JSON and text alike.
func TestLogHasOneMsgPerLine(t *testing.T) {
	var out bytes.Buffer
	log := newLogger(config.Log{Format: "json", Level: "info"}, &out)
	log.With("level", "x").Warn("smtp server", "msg", "error handling 127.0.0.1:4711: connection reset by peer", "time", "now")
	keys := jsonKeys(t, strings.TrimSpace(out.String()))
	if fmt.Sprint(keys) != "[time level msg attr_level detail attr_time]" {
		t.Errorf("keys %v in %s", keys, out.String())
	}
	out.Reset()
	log = newLogger(config.Log{Format: "text", Level: "info"}, &out)
	log.Warn("smtp server", "msg", "reset")
	if strings.Count(out.String(), "msg=") != 1 || !strings.Contains(out.String(), "detail=reset") {
		t.Errorf("text line: %s", out.String())
	}
}
