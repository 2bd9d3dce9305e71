// Package esp is what the hosted-API endpoints (Postmark, Resend,
// SendGrid, SES: the packages under it) share: the neutral Message each
// provider's request translates to, the Error every translator returns,
// and Decode, the one strict JSON reader they all use. A leaf: the
// standard library and internal/jsonkeys only.
//
// Invariants:
//   - A translator is pure: bytes in, Messages or an *Error out; it never
//     touches the queue, the network or the clock, so it is fuzzed alone.
//   - Nothing a provider's request says is dropped: a field relayq does
//     not carry out (templates, tracking, ...) is an *Error of kind
//     Unsupported naming it, never ignored; an unknown field, a member
//     name twice in one object and a wrong type are errors too.
//   - Tags and Metadata are bounded (MaxTags, MaxTagBytes, MaxMetadata,
//     MaxMetadataBytes) before a Message is returned.
package esp
