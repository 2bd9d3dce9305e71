package smtptest

import (
	"testing"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// BenchmarkDelivery measures messages per second through one server with
// bodies discarded, the shape relayq's delivery benchmarks use.
func BenchmarkDelivery(b *testing.B) {
	s, err := Start(Config{DiscardBodies: true, DiscardEvents: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.RunParallel(func(pb *testing.PB) {
		c, err := smtp.Dial(s.Addr())
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		for pb.Next() {
			if err := c.Mail("a@src.test", nil); err != nil {
				b.Error(err)
				return
			}
			if err := c.Rcpt("b@dst.test", nil); err != nil {
				b.Error(err)
				return
			}
			if err := sendData(c, testBody); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if got := s.MessageCount(); got < b.N {
		b.Fatalf("%d messages recorded, want %d", got, b.N)
	}
}
