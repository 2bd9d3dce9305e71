package admin

import (
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/relayq/relayq/internal/authlimit"
	"github.com/relayq/relayq/internal/clock"
)

// The guessing limit on the admin token and the read token: this many
// wrong tokens from one client address within TokenLockout lock that
// address out, the right token included, until the window ends. Only the
// address counts (no account): a remote guesser then never locks out the
// operator on loopback or on another host. A token of 16 random
// characters is out of reach at 10 guesses per 5 minutes per address.
const (
	MaxTokenFailures = 10
	TokenLockout     = 5 * time.Minute
)

// NewTokenLimiter returns the limiter for the admin token and the
// console's login (MaxTokenFailures per TokenLockout per address); give
// the same one to both, so that guesses through either count together.
func NewTokenLimiter(clk clock.Clock) *authlimit.Limiter {
	return authlimit.New(MaxTokenFailures, TokenLockout, -1, clk)
}

// ClientAddr is the address a request came from (r.RemoteAddr), the key
// the token limiter counts under; the zero Addr when it does not parse.
func ClientAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// checkToken answers a request that must carry a token, or returns true
// to let it through. A request without a bearer token is refused (401)
// and not counted: it guesses nothing. A wrong token is counted against
// the client's address; past the limit every token from the address gets
// 429 with Retry-After until the lockout ends. The read token on a route
// it may not reach is refused (401) but is no guess either.
func (h *handler) checkToken(w http.ResponseWriter, r *http.Request) bool {
	tok, present := bearer(r)
	if !present {
		unauthorized(w)
		return false
	}
	ip := ClientAddr(r)
	if _, ok := h.lockout.Begin(ip, ""); !ok {
		secs := int((h.lockout.RetryAfter(ip) + time.Second - 1) / time.Second)
		h.o.Logger.Warn("admin API: token refused, address locked out", "client", ip.String(), "retry_after_s", secs)
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
		writeError(w, http.StatusTooManyRequests, "too many wrong tokens from "+ip.String()+": try again in "+strconv.Itoa(max(secs, 1))+"s")
		return false
	}
	known, allowed := h.tokenKind(r, tok)
	if !known {
		n, _ := h.lockout.Finish(ip, "", false)
		h.o.Logger.Warn("admin API: wrong token", "client", ip.String(), "recent_failures", n)
		unauthorized(w)
		return false
	}
	h.lockout.Release(ip, "")
	if !allowed {
		unauthorized(w)
		return false
	}
	return true
}

// unauthorized sends 401 naming the scheme expected (RFC 6750 section 3).
func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="relayq"`)
	writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
}
