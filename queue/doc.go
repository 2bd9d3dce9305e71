// Package queue is relayq's durable message store: envelopes, bodies and
// the retry schedule in one bbolt file. It uses bbolt, the standard
// library, the leaves internal/clock and internal/backoff and its own
// queue/internal/boltcheck and queue/internal/record (the byte-level
// reader and writers every binary record is decoded and encoded with), and
// knows nothing of SMTP connections. It owns
// the on-disk format, the schedule index, the claims and crash recovery;
// the retry arithmetic whose times it stores is internal/backoff.
//
// # Surface
//
// The Store's own methods are the message's life: drafts (NewDraft,
// idempotent Replay), the schedule read in due order (NextEntry,
// DueEntries), claims and attempts in flight, outcomes (Record), grouped
// reports, parking (Park, Postpone, Holds), bodies, and the store's own
// state (Stats, Low, Err, Close). The rest is reached through small value
// types that hold the Store, each in its own file with its methods:
// Admin (the operator's listing, retry, hold, bulk, bounce and shape;
// admin.go), Events (the event log and the webhooks' cursors; events.go,
// eventcursor.go), History (history.go), Suppressions (suppress.go), TLS
// (tlsdata.go), Quarantine (quarantine.go, salvage.go) and ReturnPath
// (asyncreport.go). They add no state: every write still goes through the
// one committer (committer.go).
//
// # Invariants
//
//   - Draft.Commit returns only after the message is fsync'd, so a 250 is
//     never sent for mail that is not on disk. Open has synced the queue
//     file's directory (and each directory it created) before it returns,
//     so the file's name is on disk too: a power cut cannot take it away.
//     A failed Commit or an Abort leaves nothing behind (Open sweeps up
//     what a crash left).
//   - Every recipient is in exactly one Status. A delivered or bounced
//     recipient is never changed again; when all are final and none owes a
//     report (Recipient.Report) the message is deleted (envelope, body,
//     schedule entry) in the same transaction.
//   - A message that is not held and has a non-final recipient has exactly
//     one schedule entry, keyed by its earliest non-final NextAttempt; held
//     and finished messages have none. Every transaction that changes an
//     envelope moves its entry (writeTx.put/remove are the only writers)
//     and writes it unparked. Park alone tags entries, without writing
//     their envelopes (but to drop an unused acceptance claim), in the
//     transaction that stores the destination's hold: a crash keeps both
//     or neither.
//   - Claim pushes NextAttempt forward before the attempt is made, so a
//     crash mid-attempt causes at most one duplicate delivery, never a loss
//     and never a hot loop. The first attempt's claim may instead be made
//     in the write that queues the message (Envelope.ClaimFirst); whether a
//     recipient still carries it has one definition, FirstClaimed
//     (claim.go). Claim and UseFirstClaim return the addresses claimed.
//     UseFirstClaim reads nothing unless an operator's change, a park or
//     a quarantine may have touched the message since its commit (the
//     intervention floor, claim.go).
//   - Record stores outcomes and the DSNs they cause in one transaction: a
//     crash can neither lose a bounce nor enqueue it twice. An outcome may
//     instead mark its recipient as owing a report (Outcome.Report, for
//     reports grouped across attempts, groupdsn.go): the mark is written
//     with the outcome, cleared only by the QueueGroupedDSN or
//     RecordReporting call that queues the report (which does nothing if
//     a mark it names is gone),
//     and Open lists the messages still marked (Marked). So a grouped
//     report is neither lost nor queued twice either, and its message
//     keeps its body until then. An outcome's TLS-RPT count
//     (Outcome.TLSRPT) is written in the same transaction too.
//   - The force hook (Admin.SetForceHook) hears of an operator's retry once per
//     committed write, after the commit: never for a write that failed,
//     never twice for a write the committer redid.
//   - An idempotency key (Draft.KeepKey) is written in the transaction
//     that stores its message, or, when the key is kept already and not
//     expired, nothing of the draft is: a crash after the reply and a
//     retry give one message (idempotency.go).
//   - A message with a Release after its arrival is stored with every
//     recipient StatusScheduled and its schedule entry at the release, so
//     nothing claims it earlier (no first claim either); its first Claim
//     makes it StatusQueued. Only Retry of the message moves the release
//     forward (release.go).
//   - Admin.Shape reads an in-memory index (shapeindex.go), kept as Stats'
//     counters are: rebuilt at Open from the envelopes, changed only with
//     what writeTx.put, remove and quarantine write, and applied once the
//     transaction has committed, before its writers hear of it. So it
//     counts what a scan of the committed envelopes counts (scanShape).
//   - Admin.Bulk applies one action to its whole selection in one transaction:
//     every selected message changes, or none does.
//   - An operator's Admin.Bounce never ends a recipient an attempt is in flight
//     for, so none is both delivered and bounced: the store remembers the
//     recipients claimed (Claim and BeginAttempt register inside their
//     write, UseFirstClaim against the bounce floor) until their outcome
//     is written or the attempt is given up (EndAttempt), and Bounce, one transaction, leaves
//     those and returns them (claims.go, bounce.go).
//   - Every recipient outcome writes its event (events.go) in the same
//     transaction as the outcome: queued in Commit; delivered, deferred,
//     bounced, expired, delayed and dsn_sent in Record (dsn_sent in
//     QueueGroupedDSN for a grouped report). Event IDs are a per-file
//     sequence, so their lexical order is commit order, and a
//     waiter taken with Events.Changed is woken by the commit that adds one.
//     A finished message leaves its envelope (no body) in history, and a
//     bounce marked Suppress puts the address on the suppression list, in
//     that same transaction. History.Prune removes both after the retention.
//   - A finished message's history record sits in the events tree, and the
//     events that name it instead of repeating its fields are written in
//     its transaction and dated no later: Prune, oldest key first, never
//     leaves such an event without its record. A dictionary entry a record
//     names is written in the same transaction and never removed.
//   - Every file has an identity from its first Open on, never changed.
//     With Options.Fence set, every write transaction asks it just before
//     it commits, and checks that the file carries no newer owner's
//     fencing token than the one Owner().Fence wrote; one refusal and the
//     store writes nothing more (ErrFenced, Err). A first attempt that
//     needs no write (UseFirstClaim) asks the fence too.
//   - Suppressions.Get reads no page while the store knows the list is empty:
//     the flag is set at Open from the bucket and by every write that adds
//     an entry, before that write commits; it is never cleared while open.
//   - Admin().Accountability checks that every waiting message has a future
//     (a schedule entry, not parked behind a hold that is gone, every
//     waiting recipient due within the retry schedule and max_age), a
//     bounded slice of envelopes per call, and repairs what it finds by
//     rescheduling, never by deleting (accountability.go).
//
// # Layout
//
//	envelopes         ID -> 0x03 + CRC-32C + binary(Envelope) (see codec.go)
//	small_bodies_sum  ID -> CRC-32C + bytes                 (bodies up to 16 KiB)
//	bodies            ID -> bucket: uint32 BE chunk index -> bucket: 0x01 -> bytes, 0x02 -> CRC-32C
//	schedule          uint64 BE unix nanos + ID -> empty, or the destination it is parked behind (park.go)
//	holds             destination -> uint64 BE until nanos + uint64 BE strikes (park.go)
//	drafts            ID -> empty (spilled chunks not yet committed)
//	quarantine, quarantine_bodies, quarantine_info: damaged messages
//	tls_policies      domain -> CRC-32C + bytes             (MTA-STS policy cache, tlsdata.go)
//	tls_results       domain 0x00 YYYY-MM-DD -> CRC-32C + JSON counts (TLS-RPT)
//	events            uint64 BE sequence -> binary event record  (eventcodec.go, eventshared.go)
//	                  uint64 BE sequence + 'h' + packed ID -> finished message (eventshared.go)
//	strings           uint32 BE entry -> CRC-32C + string  (dictionary of repeated strings, dict.go)
//	history           uint64 BE finish nanos + ID -> binary record  (files written before the shared tree; historycodec.go)
//	suppressions      lower-cased address -> CRC-32C + JSON(Suppression)
//	webhook_cursors   webhook name -> last acknowledged event ID
//	egress_warmup     source NUL scope -> JSON warm-up progress (delivery's)
//	idempotency       client scope NUL key -> CRC-32C + expiry, queue ID, fingerprint, answer (idempotency.go)
//	idempotency_expiry uint64 BE expiry nanos + scoped key -> empty
//	owner             "id" -> the file's identity (32 hex digits); "token" -> uint64 BE fencing token (owner.go)
//
// Beside the file, PATH.id holds a copy of the identity, for peers that may
// not open the file to learn it (cluster adoption).
//
// Envelopes written before pending reports have no "report" field on their
// recipients and are read as owing none; a value other than "failed" or
// "delayed" fails validation (damage). Files written before checksums hold
// 0x01 + JSON envelopes, plain small bodies in small_bodies and plain
// chunks under key 0x00; they are still read, and rewritten envelopes get
// a checksum. Envelopes of format 0x02 (CRC-32C + JSON) are still read,
// and still written for an envelope with a time outside Unix nanoseconds
// (before 1678, after 2262). History records written before the binary
// format (CRC-32C + JSON(Finished)) are still read. A body chunk's CRC
// covers the message ID and chunk index too, so a chunk under the wrong
// key fails.
//
// # Damage
//
//   - Every envelope and body chunk is verified when read. A message that
//     fails (or whose body is missing while its envelope is there) is
//     moved whole to the quarantine buckets, with the reason, and never
//     delivered: a body reader fails before handing out a byte of a bad
//     chunk, so a delivery in progress is cut off, never completed.
//   - Open first checks the file's structure read-only, without mapping
//     it (Preflight, with queue/internal/boltcheck), with faults and
//     panics inside bbolt turned into an error wrapping ErrDamaged: a
//     damaged file is refused, never crashed on. A top-level bucket
//     relayq does not write (roots.go) is damage too: a damaged name,
//     which would leave a bucket out of reach and start it anew, empty.
//   - The operator's tools for a damaged or bloated file (check, salvage,
//     compact) are queue/repair; the store gives them Preflight,
//     StructureProblems, Inspect and salvage.go's methods, nothing more.
//
// # One delivery job's trips
//
// A delivery attempt touches the store at most four times:
//
//  1. the claim: UseFirstClaim for the first attempt handed over at
//     acceptance (no transaction), otherwise Claim (one fsync'd write);
//  2. the body: BodyOf, one short read transaction per chunk;
//  3. the outcome: Record, one fsync'd write with the DSNs, events,
//     history, suppressions and TLS-RPT count it causes;
//  4. when a DSN is due, the original's body for the report (Body).
//
// The retry times it hands Claim and Record are computed outside the
// store (internal/backoff). A grouped report goes with the last job's
// outcome (RecordReporting: the marks cleared in the same write); only
// when another job of the message left marks after that job's outcome
// does the job that ends last write it apart (QueueGroupedDSN).
//
// IDs are 20 upper-case hex digits: 16 of the creation time in Unix
// nanoseconds, strictly increasing within the process and above every
// stored ID, then 4 random. Lexical order is therefore creation order.
//
// Each body has its own nested bucket, and each chunk its own bucket inside
// that, because a bbolt leaf with four keys or fewer never splits and any
// write rewrites the whole leaf: megabyte chunks sharing a leaf would be
// rewritten by every neighbouring write (a 20 MiB body cost ~94 MB of page
// writes that way; with a bucket per chunk it costs about its own size).
//
// # Writes and group commit
//
// All writes except body spills go through one committer goroutine
// (committer.go). It takes every request waiting, applies them in one
// bolt transaction (one fsync pair) and answers each; requests that arrive
// meanwhile form the next batch. bolt.DB.Batch is not used: its timer adds
// up to MaxBatchDelay to every commit. Only a busy store waits: after a
// commit of at least groupSiblings requests the next batch gathers for up
// to groupWait (150 µs, about a loopback round trip), which lowers the CPU
// each message costs without slowing clients that wait for their 250. A
// request that fails is isolated by redoing the batch without it, so write
// functions must be re-runnable.
//
// # Memory
//
// A Draft keeps at most InlineLimit bytes (written with the envelope, one
// fsync for the common small message); beyond that it writes each full
// ChunkSize chunk in its own transaction, holding at most
// max(InlineLimit, ChunkSize) bytes. Body readers copy one chunk at a time
// out of short read transactions. A 25 MiB message thus costs about one
// chunk of memory, not several copies of the body.
//
// Waiting mail costs little memory: nothing reads an envelope or a body
// before it is due (the scheduler reads the index; Stats and the
// suppression flag are in memory; Prune looks before it writes). The
// shape index holds about 35 bytes per waiting message (55 when they
// spread over many domains; measured at 100,000), so Shape reads no page. bbolt
// reads through a map of the file, and pages read stay counted in the
// process's RSS until released, so the store releases the map
// (mapping.go) after Open's scan, after a full scan of the envelopes and
// after every releaseEvery pages written: it keeps mapped the pages in
// use plus at most that many.
//
// The time-ordered buckets (envelopes, small bodies, the schedule) are
// packed full when bbolt splits a page (fillFor, writetx.go): their new
// keys go at the end, and bbolt's default left them half full.
//
// # Durability settings
//
// bbolt runs with the map freelist, synced: every commit writes the
// freelist, so pages freed by delivered mail are reused by later writes,
// also after an unclean stop, and Open need not walk the file to rebuild
// it. Fsync is never disabled. The file never shrinks by itself: it keeps
// the size of the queue's busiest moment, and Stats reports its free
// bytes; repair.Compact (offline) writes a copy without them.
//
// # Locking rule
//
// No code path holds a read transaction while starting a write transaction
// in the same goroutine (bbolt can deadlock on remap). Schedule scans copy
// pages of entries out and call skip functions outside any transaction.
package queue
