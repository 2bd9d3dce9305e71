package submission

import (
	"testing"
)

// Graceful shutdown: idle sessions close at once, open transactions may
// finish, and a message past 354 is kept.

// Graceful shutdown closes idle sessions at once and lets a message being
// transferred finish and get its 250.
func TestShutdownFinishesDataClosesIdle(t *testing.T) {
	env := startServer(t, nil)
	idle := rawDial(t, env.addr)
	idle.cmd("EHLO idle", "250")
	busy := rawDial(t, env.addr)
	busy.openData()
	busy.send("Subject: in flight\r\n\r\nfirst half\r\n")

	done := shutdownAsync(env)
	// The idle client is hung up on.
	expectHangUp(t, idle)
	busy.send("second half\r\n.\r\n")
	expectStored(t, env, busy.expect("250 2.0.0 Ok: queued as "))
	waitShutdown(t, done)
}

// A client that has its recipients accepted when shutdown begins may still
// send its message, with DATA or with BDAT (RFC 3030), and gets its 250;
// the session is hung up on after that reply.
func TestShutdownLetsOpenTransactionFinish(t *testing.T) {
	for _, tc := range []struct {
		name   string
		finish func(c *rawConn) string
	}{
		{"DATA", func(c *rawConn) string {
			c.cmd("DATA", "354")
			c.send("Subject: late\r\n\r\nbody\r\n.\r\n")
			return c.expect("250 2.0.0 Ok: queued as ")
		}},
		{"BDAT", func(c *rawConn) string {
			c.send("BDAT 23\r\nSubject: late\r\n\r\nbody\r\n")
			c.expect("250")
			c.send("BDAT 0 LAST\r\n")
			return c.expect("250 2.0.0 Ok: queued as ")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := startServer(t, nil)
			c := rawDial(t, env.addr)
			c.openTransaction()
			done := shutdownAsync(env)
			// Once the listener is gone, shutdown is under way.
			waitRefused(t, env.addr)
			expectStored(t, env, tc.finish(c))
			expectHangUp(t, c)
			waitShutdown(t, done)
		})
	}
}

// go-smtp writes the 354 before it hands the message to the session, so a
// shutdown that lands right after the client reads its 354 is the tightest
// case: the client has been told to send, and must still get its 250.
func TestShutdownRightAfter354KeepsMessage(t *testing.T) {
	for i := 0; i < 20; i++ {
		env := startServer(t, nil)
		c := rawDial(t, env.addr)
		c.openData()
		done := shutdownAsync(env)
		c.send("Subject: raced\r\n\r\nbody\r\n.\r\n")
		expectStored(t, env, c.expect("250 2.0.0 Ok: queued as "))
		waitShutdown(t, done)
	}
}
