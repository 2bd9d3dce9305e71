package submission

// streamHeader is the header field (lower case) by which a client that
// no credential places names its message's stream. relayq removes it
// before the message is stored, so it is neither signed nor delivered.
const streamHeader = "x-relayq-stream"

// StreamObserver is an Observer that also counts queued messages by
// stream (the metrics package's does).
type StreamObserver interface {
	QueuedIn(stream string)
}

// streamOf is the stream a message belongs to: its credential's (an API
// key's or user's stream, which the client cannot override), else the one
// its X-Relayq-Stream header names if that is a configured stream, else
// the policy's default. With no streams configured it is "".
func (a Acceptor) streamOf(c Client, header string) string {
	p := a.s.policy.Load()
	if c.Stream != "" {
		return c.Stream
	}
	for _, s := range p.Streams {
		if header != "" && s == header {
			return s
		}
	}
	return p.DefaultStream
}

// UserStream is the stream configured for an SMTP user, or "".
func (a Acceptor) UserStream(username string) string {
	for _, u := range a.s.policy.Load().Users {
		if u.Username == username {
			return u.Stream
		}
	}
	return ""
}

// KeyStream is the stream configured for an API key by name, or "".
func (a Acceptor) KeyStream(name string) string {
	for _, k := range a.s.policy.Load().APIKeys {
		if k.Name == name {
			return k.Stream
		}
	}
	return ""
}
