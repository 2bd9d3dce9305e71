package sendmail

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/emersion/go-sasl"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// ExNoPerm is sysexits.h's EX_NOPERM: the relay refused our credentials.
const ExNoPerm = 77

// credentials for AUTH, from RELAYQ_SENDMAIL_USERNAME and
// RELAYQ_SENDMAIL_PASSWORD; empty Username means no AUTH (a trusted
// network, as the default loopback set-up is).
type credentials struct{ Username, Password string }

// dialRelay connects and greets. With credentials it upgrades with
// STARTTLS when offered; without TLS it sends them only to a loopback
// relay (this host), never across a network.
func dialRelay(server, hostname string, cr credentials) (*smtp.Client, int, error) {
	dial := func() (net.Conn, error) {
		conn, err := net.DialTimeout("tcp", server, 30*time.Second)
		if err == nil {
			_ = conn.SetDeadline(time.Now().Add(10 * time.Minute))
		}
		return conn, err
	}
	conn, err := dial()
	if err != nil {
		return nil, ExTempFail, fmt.Errorf("relay %s unreachable: %w", server, err)
	}
	c := smtp.NewClient(conn)
	if err := c.Hello(hostname); err != nil {
		c.Close()
		return nil, codeFor(err, ExDataErr), fmt.Errorf("relay %s: EHLO: %w", server, err)
	}
	if cr.Username == "" {
		return c, ExOK, nil
	}
	host, _, _ := net.SplitHostPort(server)
	ip := net.ParseIP(host)
	loopback := ip != nil && ip.IsLoopback()
	if ok, _ := c.Extension("STARTTLS"); ok {
		// go-smtp starts TLS only on a fresh client: dial again.
		c.Close()
		if conn, err = dial(); err != nil {
			return nil, ExTempFail, fmt.Errorf("relay %s unreachable: %w", server, err)
		}
		// A loopback relay is this host: its certificate names the
		// public host name, not 127.0.0.1, so it is not checked there.
		cfg := &tls.Config{ServerName: host, InsecureSkipVerify: loopback, MinVersion: tls.VersionTLS12}
		if c, err = smtp.NewClientStartTLS(conn, cfg); err != nil {
			conn.Close()
			return nil, codeFor(err, ExTempFail), fmt.Errorf("relay %s: STARTTLS: %w", server, err)
		}
	} else if !loopback {
		c.Close()
		return nil, ExConfig, fmt.Errorf("relay %s offers no STARTTLS: credentials are not sent in clear across a network", server)
	}
	if err := c.Auth(sasl.NewPlainClient("", cr.Username, cr.Password)); err != nil {
		c.Close()
		var se *smtp.SMTPError
		if errors.As(err, &se) && se.Code == 535 {
			return nil, ExNoPerm, fmt.Errorf("relay %s refused the credentials of %s: %w", server, cr.Username, err)
		}
		return nil, codeFor(err, ExNoPerm), fmt.Errorf("relay %s: AUTH: %w", server, err)
	}
	return c, ExOK, nil
}
