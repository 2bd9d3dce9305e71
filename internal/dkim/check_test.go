package dkim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
)

func TestCheck(t *testing.T) {
	rsaK := Key{Domain: "example.org", Selector: "rsa", Signer: rsaKey(), File: "/etc/rsa.pem"}
	edK := Key{Domain: "example.org", Selector: "ed", Signer: edKey()}
	rsaRec, _ := RecordValue(rsaK.Signer.Public())
	edRec, _ := RecordValue(edK.Signer.Public())
	otherRec, _ := RecordValue(edKey2().Public())
	r := dkimtest.ServeDNS(t, dkimtest.Records{
		"rsa._domainkey.example.org":     rsaRec,
		"ed._domainkey.example.org":      edRec,
		"stale._domainkey.example.org":   otherRec,
		"revoked._domainkey.example.org": "v=DKIM1; k=rsa; p=",
		"junk._domainkey.example.org":    "hello",
	}).Resolver()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tests := []struct {
		key     Key
		wantErr string
	}{
		{rsaK, ""},
		{edK, ""},
		{Key{Domain: "example.org", Selector: "stale", Signer: edKey(), File: "/k.pem"}, "not the public half of /k.pem"},
		{Key{Domain: "example.org", Selector: "revoked", Signer: rsaKey()}, "revoked"},
		{Key{Domain: "example.org", Selector: "junk", Signer: rsaKey()}, "not tag=value"},
		{Key{Domain: "example.org", Selector: "missing", Signer: rsaKey()}, "missing._domainkey.example.org."},
	}
	for _, tt := range tests {
		err := Check(ctx, r, tt.key)
		if tt.wantErr == "" && err != nil {
			t.Errorf("%s: %v", tt.key.Selector, err)
		}
		if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: error %v, want one saying %q", tt.key.Selector, err, tt.wantErr)
		}
	}
}

func TestParseRecord(t *testing.T) {
	tests := []struct {
		txt     string
		want    KeyType
		wantErr bool
	}{
		{"v=DKIM1; k=ed25519; p=AAAA", KeyEd25519, false},
		{"p=AAAA", KeyRSA, false},
		{"v=DKIM1; h=sha256; k=rsa; t=s; p=AA AA", KeyRSA, false},
		{"k=rsa; v=DKIM1; p=AAAA", "", true},
		{"v=DKIM2; p=AAAA", "", true},
		{"v=DKIM1; k=rsa", "", true},
		{"v=DKIM1; p=!!", "", true},
		{"v=DKIM1; p=AAAA; p=AAAA", "", true},
	}
	for _, tt := range tests {
		r, err := ParseRecord(tt.txt)
		if (err != nil) != tt.wantErr || (err == nil && r.Type != tt.want) {
			t.Errorf("ParseRecord(%q) = %v, %v", tt.txt, r, err)
		}
	}
}

func FuzzParseRecord(f *testing.F) {
	f.Add("v=DKIM1; k=ed25519; p=11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=")
	f.Add("p=")
	f.Add("v=DKIM1;;k=rsa;p=AA==; t=y")
	f.Fuzz(func(t *testing.T, txt string) {
		r, err := ParseRecord(txt)
		if err == nil {
			_, _ = r.PublicKey()
		}
	})
}

// Whatever bytes arrive, a Message never panics and either signs, passes
// the message by, or reports an error from Finish.
func FuzzMessage(f *testing.F) {
	f.Add([]byte(testMessage), 7)
	f.Add([]byte("From: a@example.org\r\n"), 1)
	f.Add([]byte("\r\n\r\nFrom: a@example.org\r\n"), 3)
	f.Add([]byte("DKIM-Signature: d=example.org; s=s\r\nFrom: =?utf-8?q?x?= <a@example.org>\r\n\r\n"), 2)
	s := NewSigner(Config{Keys: []Key{{Domain: "example.org", Selector: "s", Signer: edKey()}}})
	f.Fuzz(func(t *testing.T, msg []byte, n int) {
		if n <= 0 {
			n = 1
		}
		m := s.Begin()
		defer m.Close()
		for i := 0; i < len(msg); i += n {
			m.Write(msg[i:min(i+n, len(msg))])
		}
		_, _ = m.Finish()
	})
}
