// Package dkimtest verifies DKIM signatures in tests, twice: with
// go-msgauth's verifier and with an independent one, dkimpy (Debian's
// python3-dkim, run as /usr/bin/python3; .ci/run installs it). Both read the
// key records from a Records map instead of DNS. RunPython runs any other
// dkimpy program on a message and its records.
//
// Invariant: Verify fails the test unless the message carries at least one
// signature and both verifiers accept every signature on it.
package dkimtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	msgauth "github.com/emersion/go-msgauth/dkim"
)

// Python is the interpreter dkimpy is installed for.
const Python = "/usr/bin/python3"

// Records maps a key record's DNS name ("s._domainkey.example.org", no
// trailing dot) to its TXT text, strings joined.
type Records map[string]string

// LookupTXT serves the records, for go-msgauth's VerifyOptions.
func (r Records) LookupTXT(name string) ([]string, error) {
	if v, ok := r[strings.TrimSuffix(name, ".")]; ok {
		return []string{v}, nil
	}
	return nil, fmt.Errorf("no TXT record for %s", name)
}

// pyVerify prints one line per DKIM-Signature: its index and dkimpy's verdict.
const pyVerify = `
import json, sys, dkim
msg = open(sys.argv[1], 'rb').read()
recs = json.load(open(sys.argv[2]))
def dnsfunc(name, timeout=5):
    return recs.get(name.decode().rstrip('.'), '').encode()
d = dkim.DKIM(msg)
n = sum(1 for k, v in d.headers if k.lower() == b'dkim-signature')
for i in range(n):
    print(i, dkim.DKIM(msg).verify(idx=i, dnsfunc=dnsfunc))
`

var sigTags = regexp.MustCompile(`(?i)^dkim-signature:`)

// Signatures lists "d=DOMAIN s=SELECTOR" for each DKIM-Signature field of
// msg's header, top to bottom.
func Signatures(msg []byte) []string {
	hdr, _, _ := bytes.Cut(msg, []byte("\r\n\r\n"))
	var out []string
	for _, f := range strings.Split(strings.NewReplacer("\r\n ", " ", "\r\n\t", " ").Replace(string(hdr)), "\r\n") {
		if !sigTags.MatchString(f) {
			continue
		}
		var d, s string
		for _, tag := range strings.Split(f[len("DKIM-Signature:"):], ";") {
			k, v, _ := strings.Cut(tag, "=")
			v = strings.Join(strings.Fields(strings.ReplaceAll(v, "\t", " ")), "")
			switch strings.TrimSpace(k) {
			case "d":
				d = v
			case "s":
				s = v
			}
		}
		out = append(out, "d="+d+" s="+s)
	}
	return out
}

// Verify checks every signature of msg with both verifiers and returns
// Signatures(msg).
func Verify(t testing.TB, msg []byte, recs Records) []string {
	t.Helper()
	sigs := Signatures(msg)
	if len(sigs) == 0 {
		t.Fatalf("message has no DKIM-Signature:\n%s", head(msg))
	}
	vs, err := msgauth.VerifyWithOptions(bytes.NewReader(msg), &msgauth.VerifyOptions{LookupTXT: recs.LookupTXT})
	if err != nil {
		t.Fatalf("go-msgauth: %v", err)
	}
	if len(vs) != len(sigs) {
		t.Fatalf("go-msgauth checked %d signatures, the message has %d", len(vs), len(sigs))
	}
	for i, v := range vs {
		if v.Err != nil {
			t.Errorf("go-msgauth: signature %d (d=%s): %v", i, v.Domain, v.Err)
		}
	}
	got := verifyPython(t, msg, recs)
	want := ""
	for i := range sigs {
		want += fmt.Sprintf("%d True\n", i)
	}
	if got != want {
		t.Errorf("dkimpy says:\n%s\nwant:\n%s\nmessage:\n%s", got, want, head(msg))
	}
	return sigs
}

func verifyPython(t testing.TB, msg []byte, recs Records) string {
	t.Helper()
	if err := exec.Command(Python, "-c", "import dkim").Run(); err != nil {
		t.Fatalf("%s cannot import dkim (%v): install Debian's python3-dkim (.ci/run does)", Python, err)
	}
	return string(RunPython(t, pyVerify, msg, recs))
}

// RunPython runs the Python program script with two arguments: a file
// holding msg and one holding recs as JSON (name to TXT record). It
// returns what the program printed and fails the test if it fails.
func RunPython(t testing.TB, script string, msg []byte, recs Records) []byte {
	t.Helper()
	dir := t.TempDir()
	mf, rf := filepath.Join(dir, "msg.eml"), filepath.Join(dir, "records.json")
	rj, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mf, msg, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rf, rj, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(Python, "-c", script, mf, rf).CombinedOutput()
	if err != nil {
		t.Fatalf("dkimpy: %v\n%s", err, out)
	}
	return out
}

func head(msg []byte) []byte {
	if len(msg) > 2000 {
		return msg[:2000]
	}
	return msg
}
