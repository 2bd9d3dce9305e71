package submission

import (
	"os"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// atInit is how many times dummyHash had been computed when the tests
// started, that is by the package's initialisation alone.
var atInit int32

func TestMain(m *testing.M) {
	atInit = dummyHashes.Load()
	os.Exit(m.Run())
}

// Every relayq command links this package, `relayq sendmail` from cron
// included: its initialisation must not spend a bcrypt computation (about
// 100 ms) that only a failed AUTH needs.
func TestDummyHashIsNotBuiltAtInit(t *testing.T) {
	if atInit != 0 {
		t.Fatalf("dummyHash computed %d times before any test ran: package init pays for bcrypt", atInit)
	}
	h, err := dummyHash()
	if err != nil {
		t.Fatal(err)
	}
	if bcrypt.CompareHashAndPassword(h, []byte("relayq-no-such-user")) != nil {
		t.Error("dummyHash is not a bcrypt hash of its password")
	}
	before := dummyHashes.Load()
	if _, err := dummyHash(); err != nil {
		t.Fatal(err)
	}
	if n := dummyHashes.Load() - before; n != 0 {
		t.Errorf("second use computed it again (%d times)", n)
	}
}
