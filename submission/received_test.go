package submission

import (
	"net/netip"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

func TestReceivedHeader(t *testing.T) {
	now := time.Date(2026, 11, 30, 17, 4, 5, 0, time.FixedZone("", 3600))
	one := []queue.Recipient{{Address: "b@example.net"}}
	two := []queue.Recipient{{Address: "b@example.net"}, {Address: "c@example.net"}}
	for _, tc := range []struct {
		name string
		in   receivedInfo
		want string
	}{
		{"plain, one recipient", receivedInfo{Helo: "client.test", IP: netip.MustParseAddr("192.0.2.7"), Hostname: "relay.test", ID: "ID1", Rcpts: one, Now: now},
			"Received: from client.test ([192.0.2.7])\r\n\tby relay.test (relayq) with ESMTP id ID1\r\n\tfor <b@example.net>;\r\n\tMon, 30 Nov 2026 17:04:05 +0100\r\n"},
		{"TLS, auth, UTF-8, IPv6, two recipients", receivedInfo{Helo: "c", IP: netip.MustParseAddr("2001:db8::1"), Hostname: "r", ID: "ID2", TLS: true, Auth: true, UTF8: true, Rcpts: two, Now: now},
			"Received: from c ([IPv6:2001:db8::1])\r\n\tby r (relayq) with UTF8SMTPSA id ID2;\r\n\tMon, 30 Nov 2026 17:04:05 +0100\r\n"},
		{"hostile HELO and address", receivedInfo{Helo: "evil\r\nX-Injected: 1", Hostname: "r", ID: "ID3", Rcpts: []queue.Recipient{{Address: "a>b\r\n@x"}}, Now: now},
			"Received: from evil??X-Injected:?1 ([unknown])\r\n\tby r (relayq) with ESMTP id ID3\r\n\tfor <a?b??@x>;\r\n\tMon, 30 Nov 2026 17:04:05 +0100\r\n"},
		{"empty HELO", receivedInfo{Hostname: "r", ID: "ID4", TLS: true, Now: now},
			"Received: from unknown ([unknown])\r\n\tby r (relayq) with ESMTPS id ID4;\r\n\tMon, 30 Nov 2026 17:04:05 +0100\r\n"},
		{"HTTP API, authenticated, over TLS", receivedInfo{IP: netip.MustParseAddr("192.0.2.7"), Hostname: "r", ID: "ID5", With: "HTTPS", TLS: true, Auth: true, Rcpts: one, Now: now},
			"Received: from unknown ([192.0.2.7])\r\n\tby r (relayq) with HTTPS id ID5\r\n\tfor <b@example.net>;\r\n\tMon, 30 Nov 2026 17:04:05 +0100\r\n"},
		{"inbound report over TLS: no queue ID, no AUTH", receivedInfo{Helo: "mx.example.net", IP: netip.MustParseAddr("192.0.2.9"), Hostname: "r", TLS: true, Rcpts: one, Now: now},
			"Received: from mx.example.net ([192.0.2.9])\r\n\tby r (relayq) with ESMTPS\r\n\tfor <b@example.net>;\r\n\tMon, 30 Nov 2026 17:04:05 +0100\r\n"},
	} {
		if got := string(receivedHeader(tc.in)); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func BenchmarkReceivedHeader(b *testing.B) {
	in := receivedInfo{Helo: "client.example.org", IP: netip.MustParseAddr("192.0.2.7"), Hostname: "relay.example.org",
		ID: "18ECE29014E9CDA59C37", Rcpts: []queue.Recipient{{Address: "someone@example.net"}}, Now: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		receivedHeader(in)
	}
}
