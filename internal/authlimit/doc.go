// Package authlimit counts failed credential checks per client address
// and per account, and says when to stop checking: the guessing limit
// shared by SMTP AUTH, the HTTP submission API's keys (package
// submission), the admin API's bearer token and the console's login.
//
// Invariants:
//   - After Max failures within Window from one address, every further
//     guess from it is refused, the right credential included, until the
//     window that began with its first counted failure has passed. With an
//     account named (Begin's who), the same holds for the account from any
//     address; with who empty only the address counts, so that guesses
//     from elsewhere never lock out an operator on another address
//     (loopback).
//   - A guess is reserved (Begin) before it is checked and counted when it
//     ends (Finish), in one step with the release, so guesses checked in
//     parallel count while they run.
//   - A success forgets only its own account's failures; other accounts'
//     failures from the same address stay counted.
//   - Memory is bounded: stale entries are swept past a map size, and one
//     address keeps a per-account breakdown of at most a few dozen names.
//   - Time comes from the injected clock only.
package authlimit
