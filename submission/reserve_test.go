package submission

import (
	"errors"
	"path/filepath"
	"testing"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/queue"
)

// With the queue's disk below its reserve, MAIL gets 452 4.3.1 and
// nothing is queued; with room above it, mail is taken as before.
func TestMailRefusedBelowTheReserve(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reserve int64
		want    int // MAIL's reply code
	}{
		{"no reserve", 0, 250},
		{"room above the reserve", 1, 250},
		{"more reserve than any disk has", 1 << 62, 452},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := queue.Open(filepath.Join(t.TempDir(), "queue.db"), queue.Options{Reserve: tc.reserve})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			e := startServer(t, func(o *Options) { o.Queue = st })
			c := dial(t, e.addr)
			_, err = send(c, "app@example.org", []string{"a@example.net"}, "Subject: x\r\n\r\nx\r\n")
			var se *smtp.SMTPError
			switch {
			case tc.want == 250 && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != 250 && (!errors.As(err, &se) || se.Code != tc.want || se.EnhancedCode != (smtp.EnhancedCode{4, 3, 1})):
				t.Fatalf("got %v, want %d 4.3.1", err, tc.want)
			}
			if n := st.Stats().Messages; (n == 1) != (tc.want == 250) {
				t.Errorf("%d messages queued", n)
			}
		})
	}
}
