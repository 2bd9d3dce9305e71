package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/admin"
)

// selfSigned writes a fresh self-signed certificate for the DNS name
// (and no IP address) and its key into dir; it returns both paths and the
// pair for a server.
func selfSigned(t *testing.T, dir, name string) (certFile, keyFile string, pair tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{name},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	for f, b := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pair, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, pair
}

// `relayq queue` reading a config with admin.tls asks https:// and trusts
// the relay's own certificate, though it names relay1.example.net and
// the CLI asks 127.0.0.1; --ca-file or RELAYQ_ADMIN_CA_FILE trust a
// certificate for --admin; any other certificate is refused, by name.
func TestQueueCommandsTrustTheAdminCertificate(t *testing.T) {
	clearRelayqEnv(t)
	r := newRelay(t, "s3cret")
	dir := t.TempDir()
	certFile, keyFile, pair := selfSigned(t, dir, "relay1.example.net")
	otherCert, _, _ := selfSigned(t, dir, "other.example.net")
	ts := httptest.NewUnstartedServer(admin.NewHandler(admin.Options{Store: r.store, Clock: r.clock, Logger: quietLog, Token: "s3cret"}))
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	ts.StartTLS()
	defer ts.Close()
	r.enqueue("app@example.org", "a@example.net")
	host := strings.TrimPrefix(ts.URL, "https://")
	cfg := writeConfig(t, "admin:\n  listen: "+host+"\n  token: s3cret\n  tls:\n    cert_file: "+certFile+"\n    key_file: "+keyFile+
		"\nqueue:\n  path: "+filepath.Join(t.TempDir(), "q.db")+"\n")

	var out bytes.Buffer
	if err := queueCmd([]string{"list", "--config", cfg}, &out); err != nil || !strings.Contains(out.String(), "a@example.net") {
		t.Errorf("queue list --config with admin.tls: %v\n%s", err, out.String())
	}
	if err := queueCmd([]string{"list", "--admin", ts.URL, "--token", "s3cret", "--ca-file", certFile}, &out); err != nil {
		t.Errorf("--ca-file with the relay's certificate: %v", err)
	}
	err := queueCmd([]string{"list", "--admin", ts.URL, "--token", "s3cret", "--ca-file", otherCert}, &out)
	if err == nil || !strings.Contains(err.Error(), "not trusted") || !strings.Contains(err.Error(), otherCert) {
		t.Errorf("--ca-file with another certificate: %v, want a refusal naming %s", err, otherCert)
	}
	if err := queueCmd([]string{"list", "--admin", ts.URL, "--token", "s3cret"}, &out); err == nil {
		t.Error("a self-signed certificate nobody trusts was accepted")
	}
	t.Setenv("RELAYQ_ADMIN_CA_FILE", certFile)
	if err := queueCmd([]string{"list", "--admin", ts.URL, "--token", "s3cret"}, &out); err != nil {
		t.Errorf("RELAYQ_ADMIN_CA_FILE: %v", err)
	}
	t.Setenv("RELAYQ_ADMIN_CA_FILE", filepath.Join(dir, "nope.pem"))
	err = queueCmd([]string{"list", "--admin", ts.URL, "--token", "s3cret"}, &out)
	if err == nil || !strings.Contains(err.Error(), "nope.pem") {
		t.Errorf("a CA file that is not there: %v", err)
	}
}

// With an unpinned root, the host name is checked as any https client
// checks it.
func TestAdminPeerVerifiedByName(t *testing.T) {
	dir := t.TempDir()
	_, _, pair := selfSigned(t, dir, "relay1.example.net")
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	if err := verifyAdminPeer([]*x509.Certificate{leaf}, "relay1.example.net", roots, nil); err != nil {
		t.Errorf("root for its own name: %v", err)
	}
	if err := verifyAdminPeer([]*x509.Certificate{leaf}, "127.0.0.1", roots, nil); err == nil {
		t.Error("root for another name accepted without a pin")
	}
	if err := verifyAdminPeer([]*x509.Certificate{leaf}, "127.0.0.1", x509.NewCertPool(), []*x509.Certificate{leaf}); err != nil {
		t.Errorf("pinned certificate for another name: %v", err)
	}
	if err := verifyAdminPeer(nil, "relay1.example.net", roots, []*x509.Certificate{leaf}); err == nil {
		t.Error("no certificate accepted")
	}
}

func TestAdminURLWithTLS(t *testing.T) {
	if got, err := adminURL("0.0.0.0:8025", true); err != nil || got != "https://127.0.0.1:8025" {
		t.Errorf("admin.tls: %q, %v", got, err)
	}
}
