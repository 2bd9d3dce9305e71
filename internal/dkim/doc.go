// Package dkim signs outgoing mail with DKIM (RFC 6376, RFC 8463 for
// Ed25519): it loads signing keys, signs a message while it streams into the
// queue, generates keys with the DNS TXT record to publish, and checks a
// published record against its private key.
//
// Design: a message is signed once, when it is accepted. Its body streams
// into the queue draft chunk by chunk and is never whole in memory, so a
// Message sees the same bytes as the draft as they pass: it buffers only the
// header section (at most MaxHeaderBytes) to learn the From: domain and any
// signatures already present, then canonicalizes and hashes the body as it
// goes, once for all keys. At the end, Finish returns the DKIM-Signature
// header fields, which the queue stores beside the body and puts in front of
// it whenever the message is read (queue.Envelope.Prefix). So the stored
// message is the message that goes out, and a restart never signs again.
//
// 8-bit bodies: a signed message goes out byte for byte as signed. When
// its next hop does not offer 8BITMIME, smtpclient would have to convert it
// to 7 bit, which changes the body the signature's bh= covers; it refuses
// such a message with 5.6.3 instead (queue.Envelope.Prefix non-empty marks
// it), so the sender hears of it rather than a DMARC receiver silently
// junking it. Converting before signing (RFC 6376 section 5.3) was weighed
// and not chosen: it would rewrite every signed 8-bit message for every
// destination, although nearly all take 8-bit, and would need the body
// twice while the client waits for its 250.
//
// The canonicalization and the DKIM-Signature layout are our own code but
// reproduce go-msgauth's signer byte for byte (a test and a fuzz test
// compare them): its streaming Signer cost a goroutine, an io.Pipe and
// ~250 allocations per message, three times the Ed25519 signature itself.
// go-msgauth still verifies, in relayq's tests only (dkim/dkimtest);
// `dkim check` compares the published record with the key itself.
//
// Cost: what is left per message is the private-key operation
// (BenchmarkKeySign) plus ~10 us for a 1 KiB message. For RSA-2048 that
// operation (~0.8 ms) is several times everything else relayq spends on a
// message (~0.18 ms), so a CPU-bound relay signing with RSA accepts a
// fraction of its unsigned rate whatever this package does; Ed25519
// (~17 us) costs about a tenth more CPU per message. Each session signs
// its own message in its own goroutine, so concurrent sessions sign on
// every core at once; what is left to win is CPU per signature. crypto/rsa
// takes 3.5-4x the CPU of OpenSSL 3's RSA-2048 signature on the same CPU
// (constant-time big-number code against hand-tuned assembly; figures in
// docs/performance.md), and about 1.7x more again for a key without its
// precomputed CRT values, which it derives anew for every signature: the
// Signer therefore signs with a precomputed copy of every RSA key.
//
// Invariants:
//   - A message whose From: domain (or a parent domain of it) has keys is
//     signed with every key of the most specific such domain (one signature
//     per key: RSA and Ed25519 side by side), or Finish returns an error and
//     the caller must not queue it. No key, no From: field: nothing to do.
//     A Message begun with a KeyFilter (BeginWith: a tenant's own keys)
//     sees only the keys it allows, and is never signed with another.
//   - A key whose domain and selector already signed the message (a
//     DKIM-Signature with the same d= and s=) does not sign it again.
//   - The signed header fields are those of DefaultHeaders (or the
//     configured list) that are present, each as often as it occurs, plus
//     From: once more than it occurs, so a second From: added later breaks
//     the signature. Canonicalization is relaxed/relaxed.
//   - Keys are replaced as a whole (Signer.Update, on SIGHUP); a message in
//     progress keeps the keys it started with.
//   - An RSA key signs with its CRT values precomputed, on a copy: the
//     caller's key is never written to.
//   - Errors about key files name the file.
package dkim
