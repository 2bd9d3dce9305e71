// Package ses translates Amazon SES v2's SendEmail (POST
// /v2/email/outbound-emails, as the AWS SDKs send it; Simple and Raw
// content) to esp.Message, verifies the request's AWS Signature Version
// 4, and writes SES's errors (the X-Amzn-ErrorType header and a
// {"message"} body), so that an SES client pointed at relayq by its
// endpoint override reads success and failure as it would from SES.
//
// Invariants:
//   - Verify recomputes the signature with aws-sdk-go-v2's own v4 signer
//     over exactly the headers the client signed, never a hand-written
//     canonical request; a signature that does not match, a key that is
//     not configured, a signing time further than MaxSkew from now, and
//     a body whose hash is not the one signed are each refused.
//   - Template content, ARNs, list management, feedback forwarding and
//     endpoint IDs are refused naming the field; EmailTags become
//     metadata and ConfigurationSetName the stream.
//   - Raw content is passed on as the message's bytes (esp.Message.Raw);
//     Destination, when given, is the envelope.
package ses
