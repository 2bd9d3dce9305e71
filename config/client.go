package config

import (
	"fmt"
	"strings"
)

// Submitter is what a program that submits to the relay (relayq sendmail)
// needs from the relay's configuration: the relay's name and where it
// listens for submissions.
type Submitter struct {
	// Hostname is the hostname key, "" when unset (the caller decides
	// what the system's name stands in for).
	Hostname string
	// Listen is submission.listen.
	Listen []string
}

// LoadSubmitter reads hostname and submission.listen from the embedded
// defaults, the YAML file at path ("" for none) and the RELAYQ_HOSTNAME and
// RELAYQ_SUBMISSION_LISTEN variables, with Load's precedence, and checks
// those two keys only. Unlike Load it opens no file the configuration
// names (TLS and DKIM keys, readable by root alone on a real install) and
// judges no other key: every local user may submit mail, and a key meant
// for the daemon is the daemon's business.
func LoadSubmitter(path string) (Submitter, error) {
	data, err := readFile(path)
	if err != nil {
		return Submitter{}, err
	}
	l, err := newLoader(path, data)
	if err != nil {
		return Submitter{}, err
	}
	s := Submitter{Hostname: strings.TrimSpace(l.str("hostname")), Listen: l.strList("submission.listen")}
	if s.Hostname != "" && !validHostname(s.Hostname) {
		l.failf("hostname", "%q is not a host name (letters, digits, '-' and '.')", s.Hostname)
	}
	for i, a := range s.Listen {
		l.listenAddr("submission.listen", fmt.Sprintf("[%d]", i), a)
	}
	if l.err != nil {
		return Submitter{}, l.err
	}
	return s, nil
}
