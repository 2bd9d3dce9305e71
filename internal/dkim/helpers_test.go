package dkim

import (
	"crypto"
	"sync"
	"testing"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
)

// Keys are generated once per test binary: RSA-2048 takes a while under -race.
var (
	rsaKey = sync.OnceValue(func() crypto.Signer { return mustGenerate(KeyRSA) })
	edKey  = sync.OnceValue(func() crypto.Signer { return mustGenerate(KeyEd25519) })
	edKey2 = sync.OnceValue(func() crypto.Signer { return mustGenerate(KeyEd25519) })
)

func mustGenerate(t KeyType) crypto.Signer {
	k, err := GenerateKey(t, 0)
	if err != nil {
		panic(err)
	}
	return k
}

// records publishes keys the way `relayq dkim keygen` prints them: the
// TXT strings of ZoneLine, joined as a resolver joins them.
func records(t testing.TB, keys ...Key) dkimtest.Records {
	t.Helper()
	recs := dkimtest.Records{}
	for _, k := range keys {
		line, err := ZoneLine(k.Domain, k.Selector, k.Signer.Public())
		if err != nil {
			t.Fatal(err)
		}
		name, value, ok := dkimtest.ParseZoneLine(line)
		if !ok {
			t.Fatalf("zone line %q", line)
		}
		recs[name] = value
	}
	return recs
}

// signStream writes msg to a Message n bytes at a time, the way the queue
// draft receives it, and returns the signed message.
func signStream(t testing.TB, s *Signer, msg string, n int) []byte {
	t.Helper()
	m := s.Begin()
	defer m.Close()
	for i := 0; i < len(msg); i += n {
		m.Write([]byte(msg[i:min(i+n, len(msg))]))
	}
	prefix, err := m.Finish()
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return append(prefix, msg...)
}

const testMessage = "Received: from app.example.org by relay.example.org; Mon, 30 Nov 2026 17:00:00 +0000\r\n" +
	"From: App <app@example.org>\r\n" +
	"To: you@example.net\r\n" +
	"Subject: Your receipt\r\n" +
	"Date: Mon, 30 Nov 2026 17:00:00 +0000\r\n" +
	"Message-ID: <1@example.org>\r\n" +
	"MIME-Version: 1.0\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n" +
	"\r\n" +
	"Thank you.\r\n" +
	"..a line that was dot-stuffed on the wire\r\n" +
	"trailing spaces   \r\n" +
	"\r\n\r\n"
