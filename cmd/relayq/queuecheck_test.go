package main

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/queue"
)

// storeWith writes messages with the given bodies into a new queue file,
// closes it and returns its path and the IDs.
func storeWith(t *testing.T, bodies ...[]byte) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "queue.db")
	st, err := queue.Open(path, queue.Options{LockTimeout: 100 * time.Millisecond, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, b := range bodies {
		d := st.NewDraft()
		d.Write(b)
		if err := d.Commit(queue.Envelope{From: "app@example.org", Recipients: []queue.Recipient{{Address: "x@example.net"}}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID())
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return path, ids
}

// damage flips one byte of marker where it is stored in the file, as a
// disk error would.
func damage(t *testing.T, path, marker string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(marker))
	if i < 0 {
		t.Fatalf("%q not found in the file", marker)
	}
	b[i+len(marker)/2] ^= 0x01
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// offline runs an offline `relayq queue` command.
func offline(args ...string) (string, error) {
	var out bytes.Buffer
	err := queueCmd(args, &out)
	return out.String(), err
}

func TestQueueListQuarantined(t *testing.T) {
	path, ids := storeWith(t, []byte("Subject: fine\r\n\r\nfine\r\n"), []byte("Subject: doomed\r\n\r\nDAMAGED-ON-DISK\r\n"))
	damage(t, path, "DAMAGED-ON-DISK")
	st, err := queue.Open(path, queue.Options{LockTimeout: 100 * time.Millisecond, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ts := httptest.NewServer(admin.NewHandler(admin.Options{Store: st, Logger: quietLog}))
	defer ts.Close()

	out, err := queueCmd2(ts.URL, "list", "--quarantined")
	if err != nil || !strings.Contains(out, "Quarantine is empty") {
		t.Fatalf("before the damage is read: %q, %v", out, err)
	}
	rc, _ := st.Body(ids[1])
	if _, err := io.ReadAll(rc); !errors.Is(err, queue.ErrDamaged) {
		t.Fatalf("reading the damaged body: %v, want ErrDamaged", err)
	}
	out, err = queueCmd2(ts.URL, "list", "--quarantined")
	t.Logf("\n%s", out)
	if err != nil || !strings.Contains(out, ids[1]) || !strings.Contains(out, "checksum mismatch") || strings.Contains(out, ids[0]) {
		t.Fatalf("list --quarantined = %q, %v; want %s with its reason only", out, err, ids[1])
	}
	out, _ = queueCmd2(ts.URL, "list")
	if strings.Contains(out, ids[1]) || !strings.Contains(out, ids[0]) {
		t.Errorf("the queue still lists the quarantined message:\n%s", out)
	}
	out, _ = queueCmd2(ts.URL, "list", "--quarantined", "--json")
	if !strings.Contains(out, `"id": "`+ids[1]+`"`) || !strings.Contains(out, `"reason"`) {
		t.Errorf("--json: %s", out)
	}
	if out, err := queueCmd2(ts.URL, "delete", "--quarantined", ids[1]); err != nil || !strings.Contains(out, "deleted") {
		t.Fatalf("delete --quarantined: %q, %v", out, err)
	}
	if out, _ := queueCmd2(ts.URL, "list", "--quarantined"); !strings.Contains(out, "Quarantine is empty") {
		t.Errorf("after delete --quarantined: %s", out)
	}
	if _, err := queueCmd2(ts.URL, "delete", "--quarantined", ids[0]); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("delete --quarantined of a live message: %v", err)
	}
}

func queueCmd2(url string, args ...string) (string, error) {
	var out bytes.Buffer
	err := queueCmd(append(args, "--admin", url), &out)
	return out.String(), err
}

func TestQueueCheckSalvageCompact(t *testing.T) {
	var bodies [][]byte
	for i := range 40 {
		bodies = append(bodies, bytes.Repeat([]byte{byte('a' + i%26)}, 60<<10))
	}
	bodies = append(bodies, []byte("Subject: x\r\n\r\nDAMAGED-ON-DISK\r\n"))
	path, ids := storeWith(t, bodies...)

	out, err := offline("check", "--file", path)
	if err != nil || !strings.Contains(out, "structure: ok") || !strings.Contains(out, "41 whole and verified, 0 damaged") {
		t.Fatalf("check of a sound file: %v\n%s", err, out)
	}

	damage(t, path, "DAMAGED-ON-DISK")
	out, err = offline("check", "--file", path)
	if err == nil || !strings.Contains(out, ids[40]) || !strings.Contains(out, "40 whole and verified, 1 damaged") {
		t.Fatalf("check of a file with a damaged body: %v\n%s", err, out)
	}

	cut := filepath.Join(t.TempDir(), "cut.db")
	b, _ := os.ReadFile(path)
	os.WriteFile(cut, b[:len(b)/2], 0o600)
	out, err = offline("check", "--file", cut)
	if err == nil || !strings.Contains(out, "structure: DAMAGED") || !strings.Contains(err.Error(), "salvage") {
		t.Fatalf("check of a truncated file: %v\n%s", err, out)
	}

	to := filepath.Join(t.TempDir(), "new.db")
	out, err = offline("salvage", "--file", path, "--to", to)
	if err != nil || !strings.Contains(out, "40 messages whole and verified, 1 in quarantine") || !strings.Contains(out, ids[40]) {
		t.Fatalf("salvage: %v\n%s", err, out)
	}
	if _, err := offline("salvage", "--file", path); err == nil {
		t.Error("salvage without --to succeeded")
	}

	// Delete most messages, then compact: the file shrinks, the rest stays.
	st, err := queue.Open(to, queue.Options{LockTimeout: 100 * time.Millisecond, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:36] {
		if err := st.Admin().Delete(id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := offline("compact", "--file", to); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("compact of a file in use: %v", err)
	}
	before := st.Stats()
	st.Close()
	out, err = offline("compact", "--file", to)
	if err != nil {
		t.Fatalf("compact: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(out))
	fi, _ := os.Stat(to)
	if fi.Size() >= before.FileBytes-before.FreeBytes/2 {
		t.Errorf("compacted file is %d bytes; before %d with %d free", fi.Size(), before.FileBytes, before.FreeBytes)
	}
	st, err = queue.Open(to, queue.Options{LockTimeout: 100 * time.Millisecond, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range ids[36:40] {
		rc, err := st.Body(id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		if err != nil || !bytes.Equal(got, bodies[slices.Index(ids, id)]) {
			t.Errorf("%s after compact: %v", id, err)
		}
	}
}
