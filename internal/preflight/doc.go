// Package preflight is the Acceptor's checks of a message before it is
// stored, per stream: does the From: domain have a DKIM key here that
// aligns with it (RFC 7489 section 3.1.1), does it publish a DMARC record
// that the message can pass (DKIM or the return path aligned), and does a
// bulk message carry one-click unsubscribe (RFC 8058), or may relayq add
// it. Each check is off, warn or refuse per stream; a warning is reported
// with the message, a refusal is the reply (550 5.7.x) naming the check
// and the fix.
//
// Invariants:
//   - Check never looks up DNS for a domain whose answer is cached: DMARC
//     records are cached per domain for their TTL (clamped to 1 minute -
//     1 day) and refreshed in the background once stale, while the stale
//     answer keeps serving; only the first message of a domain waits for
//     the lookup, bounded by Options.Timeout, and concurrent first
//     messages share one lookup.
//   - DNS trouble (SERVFAIL, a timeout) is never a refusal: it is a
//     warning, cached for a minute.
//   - Check is a pure function of the message, the configuration and the
//     cache; it writes nothing but the Add fields it returns, and only
//     when the stream says one_click: add and the message has none of its
//     own.
//   - Alignment follows the signer: the key that signs is the configured
//     domain equal to From:'s or the nearest parent (internal/dkim), and it
//     aligns when it is the same domain (strict) or shares its
//     organizational domain, found with the public suffix list
//     (golang.org/x/net/publicsuffix); a public suffix aligns with nothing
//     but itself.
//
// It imports internal/identity and internal/clock, and
// golang.org/x/net/publicsuffix.
package preflight
