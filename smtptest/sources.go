package smtptest

import (
	"slices"
	"strings"
)

// ClientSource is what the server saw from one client address: the
// connections it opened, the messages it got accepted and the EHLO names
// it gave. A relay that sends from several source addresses is checked
// against it (which share of the mail each address carried, and whether
// each said its own name).
type ClientSource struct {
	// IP is the client's address, without the port.
	IP string `json:"ip"`
	// Connections counts the TCP connections accepted from IP.
	Connections int `json:"connections"`
	// Messages counts the messages accepted from IP (not reset by Reset or
	// deletes: it is a tally of what the client sent).
	Messages int `json:"messages"`
	// Helos are the distinct HELO/EHLO names of IP's accepted messages,
	// sorted.
	Helos []string `json:"helos"`
}

// sourceTally keeps a ClientSource per IP; the recorder's mutex guards it.
type sourceTally map[string]*ClientSource

func (t sourceTally) get(ip string) *ClientSource {
	s, ok := t[ip]
	if !ok {
		s = &ClientSource{IP: ip}
		t[ip] = s
	}
	return s
}

func (t sourceTally) message(m Message) {
	s := t.get(hostOf(m.Client))
	s.Messages++
	if i, found := slices.BinarySearch(s.Helos, m.Helo); !found {
		s.Helos = slices.Insert(s.Helos, i, m.Helo)
	}
}

// Sources returns what each client address sent, ordered by address.
func (s *Server) Sources() []ClientSource {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	out := make([]ClientSource, 0, len(s.rec.sources))
	for _, c := range s.rec.sources {
		c := *c
		c.Helos = append([]string{}, c.Helos...)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b ClientSource) int { return strings.Compare(a.IP, b.IP) })
	return out
}
