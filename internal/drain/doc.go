// Package drain hands a node's whole queue to another relayq over SMTP, to
// retire or replace a host without losing or duplicating mail (`relayq
// queue drain --to HOST:PORT`, POST /api/v1/queue/drain).
//
// A drain pauses delivery (Engine.Pause returns once no attempt is in
// flight) and stops the intake (Intake.SetDraining), makes every waiting
// recipient due (queue.Admin.Flush) and then, message by message, in a few
// parallel SMTP sessions to the peer:
//
//  1. claims the message's non-final recipients (queue.Store.Claim: the
//     attempt is on disk, fsync'd, before a byte goes out);
//  2. sends it with smtpclient.Dialer.Deliver, envelope and DSN parameters
//     as submitted (the sender, "<>" included; RET, ENVID, NOTIFY, ORCPT;
//     SMTPUTF8 and BODY where the message needs them) and the body as
//     queue.Store.BodyOf reads it, DKIM signature fields in front;
//  3. records what the peer said (queue.Store.Record), judged as delivery
//     judges its own attempts (Engine.Outcomes): a recipient the peer took
//     with 250 is delivered, and a message whose recipients are all final
//     is deleted in that same write; a 5xx bounces (with a DSN, as usual),
//     a 4xx stays queued here.
//
// # Invariants
//
//   - A message is deleted locally only after the peer's 250 for it, and
//     only for the recipients the peer accepted.
//   - Record before send: a crash (kill -9) or a stop mid-drain loses
//     nothing. The messages in flight keep their claim (due again after
//     DefaultClaimFor) and are sent again by the next drain (or delivered
//     by this node after a restart): a message the peer took before its
//     250 was recorded here arrives twice, at most one duplicate per
//     message in flight, the same promise delivery makes.
//   - While a drain runs, nothing else attempts delivery and nothing new is
//     queued, except the bounces the drain itself writes, which it hands
//     over too. Held messages are left alone and counted.
//   - A peer that cannot be reached, or that answers 421, ends the drain
//     (state failed): the message it was sending stays queued.
//   - The node stays out of service (no intake, no delivery) from Start
//     until Stop, whether the run finished, failed or is still going, so
//     a drained node does not fill up again; a restart also puts it back
//     in service.
package drain
