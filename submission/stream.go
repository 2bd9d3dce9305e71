package submission

import "github.com/relayq/relayq/internal/identity"

// streamHeader is the header field (lower case) by which a client that
// no credential places names its message's stream. relayq removes it
// before the message is stored, so it is neither signed nor delivered.
const streamHeader = "x-relayq-stream"

// StreamObserver is an Observer that also counts queued messages by
// stream (the metrics package's does).
type StreamObserver interface {
	QueuedIn(stream string)
}

// sender is who submitted a message, resolved once: the one place a
// credential becomes a Sender. header is the X-Relayq-Stream field's value.
func (a Acceptor) sender(c Client, header string) identity.Sender {
	tenant, def := a.tenantOf(c.Credential)
	return identity.Sender{Tenant: tenant, Stream: a.streamOf(c.Credential, header, def), Credential: c.Credential}
}

// streamOf is the stream a message belongs to: its credential's (an API
// key's or user's stream, which the client cannot override), else the one
// its X-Relayq-Stream header names if that is a configured stream, else
// its tenant's default (tenantDefault), else the policy's default. With no
// streams configured it is "".
func (a Acceptor) streamOf(c identity.Credential, header, tenantDefault string) string {
	p := a.s.policy.Load()
	if s := a.credentialStream(c); s != "" {
		return s
	}
	for _, s := range p.Streams {
		if header != "" && s == header {
			return s
		}
	}
	if tenantDefault != "" {
		return tenantDefault
	}
	return p.DefaultStream
}

// credentialStream is the stream configured for the credential's user or
// API key, or "".
func (a Acceptor) credentialStream(c identity.Credential) string {
	p := a.s.policy.Load()
	switch c.Kind {
	case identity.User:
		for _, u := range p.Users {
			if u.Username == c.Name {
				return u.Stream
			}
		}
	case identity.APIKey:
		for _, k := range p.APIKeys {
			if k.Name == c.Name {
				return k.Stream
			}
		}
	}
	return ""
}
