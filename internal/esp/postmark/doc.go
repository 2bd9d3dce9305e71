// Package postmark translates Postmark's email API (POST /email and
// /email/batch, as its SDKs send them) to esp.Message and writes its
// answers and errors in Postmark's shapes ({"ErrorCode", "Message"}), so
// that a Postmark SDK pointed at relayq reads success and failure as it
// would from Postmark. Pure: no I/O.
//
// Invariants:
//   - Address fields are Postmark's comma-separated lists, parsed as RFC
//     5322 address lists (a quoted name may hold a comma).
//   - TrackOpens true, TrackLinks other than None, and template fields
//     are refused naming the field (relayq does not rewrite messages);
//     MessageStream becomes the stream, Tag a tag, Metadata metadata.
//   - A batch is one JSON array; an item that does not translate is
//     answered in its place with its own ErrorCode, as Postmark does,
//     and the others go on.
package postmark
