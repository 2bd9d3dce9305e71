package smtpcodes

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// These tests produce the errors Classify sees in production from real
// sockets on loopback, not hand-built values, so a change in how the
// standard library or go-smtp reports them shows up here.

const ioTimeout = 5 * time.Second

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// serve runs handle for every connection accepted on ln until the test ends.
func serve(t *testing.T, ln net.Listener, handle func(net.Conn)) {
	t.Helper()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(ioTimeout))
				handle(c)
			}()
		}
	}()
}

func wantLocal(t *testing.T, got Reply, enh string) {
	t.Helper()
	if got.Class != Transient || got.Code != 0 || got.Enhanced != enh || got.Text == "" {
		t.Errorf("got %#v, want transient local %s", got, enh)
	}
}

func TestClassifyRefusedDial(t *testing.T) {
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: the kernel answers RST
	conn, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err == nil {
		conn.Close()
		t.Skip("port was reused before the dial")
	}
	wantLocal(t, Classify(StageConnect, err), "4.4.1")
}

func TestClassifyReadTimeout(t *testing.T) {
	ln := listen(t)
	serve(t, ln, func(c net.Conn) { bufio.NewReader(c).ReadString('\n') }) // never greets
	conn, err := net.DialTimeout("tcp", ln.Addr().String(), ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now()) // already expired: the read fails at once
	_, err = conn.Read(make([]byte, 1))
	wantLocal(t, Classify(StageGreeting, err), "4.4.2")
}

func TestClassifyGoSMTPConnectionClosed(t *testing.T) {
	ln := listen(t)
	// Greets, accepts EHLO, then hangs up on MAIL.
	serve(t, ln, func(c net.Conn) {
		r := bufio.NewReader(c)
		c.Write([]byte("220 test ESMTP\r\n"))
		r.ReadString('\n')
		c.Write([]byte("250 test\r\n"))
		r.ReadString('\n')
	})
	conn := dial(t, ln)
	c := smtp.NewClient(conn)
	defer c.Close()
	if err := c.Hello("relay.test"); err != nil {
		t.Fatal(err)
	}
	err := c.Mail("a@example.com", nil)
	wantLocal(t, Classify(StageMail, err), "4.4.2")

	// A server that closes before greeting.
	ln2 := listen(t)
	serve(t, ln2, func(net.Conn) {})
	conn2 := dial(t, ln2)
	c2 := smtp.NewClient(conn2)
	defer c2.Close()
	wantLocal(t, Classify(StageGreeting, c2.Hello("relay.test")), "4.4.1")
}

func TestClassifyGoSMTPReplies(t *testing.T) {
	ln := listen(t)
	serve(t, ln, func(c net.Conn) {
		r := bufio.NewReader(c)
		c.Write([]byte("220 test ESMTP\r\n"))
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			switch cmd := strings.ToUpper(line); {
			case strings.HasPrefix(cmd, "EHLO"):
				c.Write([]byte("250-test\r\n250 ENHANCEDSTATUSCODES\r\n"))
			case strings.HasPrefix(cmd, "MAIL"):
				c.Write([]byte("250 2.1.0 ok\r\n"))
			case strings.Contains(cmd, "FULL@"):
				c.Write([]byte("552-5.2.2 Mailbox full,\r\n552 5.2.2 try later\r\n"))
			case strings.Contains(cmd, "NOBODY@"):
				c.Write([]byte("550 5.1.1 No such user\r\n"))
			case strings.HasPrefix(cmd, "QUIT"):
				c.Write([]byte("221 bye\r\n"))
				return
			default:
				c.Write([]byte("500 what\r\n"))
			}
		}
	})
	conn := dial(t, ln)
	c := smtp.NewClient(conn)
	defer c.Close()
	if err := c.Mail("a@example.com", nil); err != nil {
		t.Fatal(err)
	}
	full := Classify(StageRcpt, c.Rcpt("full@example.com", nil))
	if want := (Reply{Transient, 552, "4.2.2", "Mailbox full, try later", "5.2.2"}); full != want {
		t.Errorf("552 at RCPT: got %#v, want %#v", full, want)
	}
	nobody := Classify(StageRcpt, c.Rcpt("nobody@example.com", nil))
	if want := (Reply{Permanent, 550, "5.1.1", "No such user", "5.1.1"}); nobody != want {
		t.Errorf("550 at RCPT: got %#v, want %#v", nobody, want)
	}
}

func TestClassifyTLSErrors(t *testing.T) {
	// A server with a self-signed certificate: verification must fail.
	ln := listen(t)
	cert := selfSigned(t)
	serve(t, ln, func(c net.Conn) {
		tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}}).Handshake()
	})
	err := tlsHandshake(t, ln)
	if err == nil {
		t.Fatal("handshake with a self-signed certificate succeeded")
	}
	wantLocal(t, Classify(StageStartTLS, err), "4.7.5")
	// The handshake is lazy in go-smtp: the error surfaces at a later stage.
	wantLocal(t, Classify(StageMail, err), "4.7.5")

	// A server that speaks plain SMTP where TLS was expected.
	ln2 := listen(t)
	serve(t, ln2, func(c net.Conn) {
		c.Write([]byte("220 plain ESMTP service ready\r\n"))
		bufio.NewReader(c).ReadString('\n')
	})
	err = tlsHandshake(t, ln2)
	if err == nil {
		t.Fatal("TLS handshake with a plain-text server succeeded")
	}
	wantLocal(t, Classify(StageStartTLS, err), "4.7.5")
}

// dial connects to ln with ioTimeout as the deadline of all I/O.
func dial(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", ln.Addr().String(), ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(ioTimeout))
	return conn
}

// tlsHandshake dials ln and returns what a TLS handshake as a client of
// mx.example.com ends with.
func tlsHandshake(t *testing.T, ln net.Listener) error {
	t.Helper()
	tc := tls.Client(dial(t, ln), &tls.Config{ServerName: "mx.example.com"})
	err := tc.Handshake()
	tc.Close()
	return err
}

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "mx.example.com"},
		DNSNames:     []string{"mx.example.com"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
