package httpsubmit

import (
	"net/http"
	"net/netip"
	"strings"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

// authenticate turns the request into a submission.Client: a Bearer API
// key or Basic SMTP credentials make it authenticated; without an
// Authorization header it is anonymous (and may relay only from a trusted
// network, which MayRelay decides).
func (s *Server) authenticate(r *http.Request, ip netip.Addr) (submission.Client, *smtp.SMTPError) {
	c := submission.Client{IP: ip, TLS: r.TLS != nil, With: "HTTP"}
	if c.TLS {
		c.With = "HTTPS"
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return c, nil
	}
	if !c.TLS && !s.acc.AllowInsecureAuth() {
		return c, s.acc.Refuse(c, submission.RejectAuth, errNeedTLS)
	}
	scheme, cred, _ := strings.Cut(h, " ")
	var err error
	switch strings.ToLower(scheme) {
	case "bearer":
		var name string
		name, err = s.acc.LoginKey(ip, strings.TrimSpace(cred))
		c.Credential = identity.Credential{Kind: identity.APIKey, Name: name}
	case "basic":
		user, pass, ok := r.BasicAuth()
		if !ok {
			return c, s.acc.Refuse(c, submission.RejectAuth, errBadAuthHeader)
		}
		err = s.acc.Login(ip, user, pass)
		c.Credential = identity.Credential{Kind: identity.User, Name: user}
	default:
		return c, s.acc.Refuse(c, submission.RejectAuth, errBadAuthHeader)
	}
	if err != nil {
		c.Credential = identity.Credential{}
		return c, asSMTP(err)
	}
	return c, nil
}

func queueRecipient(addr string) queue.Recipient { return queue.Recipient{Address: addr} }
