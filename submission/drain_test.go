package submission

import (
	"errors"
	"io"
	"testing"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// TestDrainingRefusesMail: while the node is drained, MAIL gets 421 4.3.2
// and a transaction already open gets 451 4.3.2 at the end of DATA, with
// nothing queued; afterwards mail is taken again.
func TestDrainingRefusesMail(t *testing.T) {
	te := startServer(t, nil)
	open := dial(t, te.addr)
	if err := open.Mail("a@example.org", nil); err != nil {
		t.Fatal(err)
	}
	if err := open.Rcpt("b@example.net", nil); err != nil {
		t.Fatal(err)
	}

	te.srv.SetDraining(true)
	c := dial(t, te.addr)
	err := c.Mail("a@example.org", nil)
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != 421 || se.EnhancedCode != (smtp.EnhancedCode{4, 3, 2}) {
		t.Fatalf("MAIL while draining: %v, want 421 4.3.2", err)
	}

	w, err := open.Data()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, "Subject: x\r\n\r\nbody\r\n"); err != nil {
		t.Fatal(err)
	}
	err = w.Close()
	if !errors.As(err, &se) || se.Code != 451 || se.EnhancedCode != (smtp.EnhancedCode{4, 3, 2}) {
		t.Fatalf("end of DATA of a transaction opened before the drain: %v, want 451 4.3.2", err)
	}
	if n := te.store.Stats().Messages; n != 0 {
		t.Fatalf("%d messages queued while draining, want 0", n)
	}

	te.srv.SetDraining(false)
	if _, err := send(dial(t, te.addr), "a@example.org", []string{"b@example.net"}, "Subject: y\r\n\r\nbody\r\n"); err != nil {
		t.Fatalf("after the drain: %v", err)
	}
	if n := te.store.Stats().Messages; n != 1 {
		t.Fatalf("%d messages queued after the drain, want 1", n)
	}
}
