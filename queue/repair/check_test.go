package repair

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
)

// TestTruncatedFileIsRefusedNotCrashed: `truncate -s 50%` made Open fault
// inside bbolt (SIGSEGV) during recovery; it must be refused with the
// advice to run the check.
func TestTruncatedFileIsRefusedNotCrashed(t *testing.T) {
	path, _ := queuetest.Fill(t, 60)
	fi, _ := os.Stat(path)
	for _, frac := range []int64{50, 10} {
		p := copyFile(t, path)
		if err := os.Truncate(p, fi.Size()*frac/100); err != nil {
			t.Fatal(err)
		}
		_, err := queue.Open(p, queuetest.Options(queuetest.NewClock()))
		if !errors.Is(err, queue.ErrDamaged) || !strings.Contains(err.Error(), "run `relayq queue check`") {
			t.Fatalf("Open of a file cut to %d%%: %v, want ErrDamaged with advice", frac, err)
		}
		t.Logf("%d%%: %v", frac, err)
		rep, err := Check(p, CheckOptions{})
		if err != nil || rep.OK() {
			t.Errorf("Check of a file cut to %d%%: %+v, %v; want damage reported", frac, rep, err)
		}
	}
}
