// Package persona plays a mail provider as a small state machine over what
// the server has seen: per-IP message rates, open connections, unknown
// users, unsigned mail, greylisted triplets, a seeded share of failures and
// slow replies. The personas and their reply texts live in personas.yaml
// (embedded), each text quoted from the provider's postmaster page named
// beside it; a user file in the same format adds more (Load).
//
// Invariants:
//   - A persona decides from what it is shown (Seen) and its own state;
//     it reads no clock and no randomness of its own: time is Seen.Now,
//     and flaky draws from a generator seeded by the spec.
//   - A refused command changes no state: it takes no rate slot and
//     starts no greylist wait.
//   - Every parameter a check uses is declared by its persona, and a spec
//     naming another is refused, so a typo cannot silently keep a default.
//   - An Instance is safe for concurrent use.
package persona
