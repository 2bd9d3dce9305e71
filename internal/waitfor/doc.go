// Package waitfor is the one way relayq's tests wait for something another
// goroutine or process makes true: a condition polled until it holds, with a
// deadline that only bounds how long a failing test takes.
//
// Invariants:
//   - Correctness never depends on wall-clock speed. The condition is checked
//     first without waiting, then after every tick, and once more when the
//     deadline passes, so a condition that holds is always seen, however
//     slow the machine; the deadline decides only when to give up.
//   - The tick starts at a millisecond and doubles up to 50ms, so a fast
//     condition is seen at once and a slow one does not spin a busy CPU.
//   - It sleeps on timers, never on time.Sleep, and imports nothing of relayq:
//     every package's tests and e2e can use it. It is test-only code.
//
// Where a component can say "something changed" (smtptest.Server.WaitFor, a
// channel), wait on that instead; waitfor is for state that can only be
// asked.
package waitfor
