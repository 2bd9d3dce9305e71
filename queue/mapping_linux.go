package queue

import (
	"os"
	"unsafe"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// releaseMapping drops the queue file's pages from this process's memory
// map after the start-up scan. bbolt maps the file; the scan reads every
// envelope, and the kernel maps cached neighbours of each page it faults
// in ("fault-around"), so after a restart over 100,000 queued messages the
// whole file counted as resident (about 320 MiB for 100,000 small
// messages). MADV_DONTNEED on a read-only shared file mapping loses
// nothing: the pages stay in the page cache and are mapped again when read.
func releaseMapping(db *bolt.DB, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	info := db.Info()
	if fi.Size() == 0 || info.Data == 0 {
		return nil
	}
	// info.Data is the start of bbolt's mapping (not Go heap memory); read
	// its bits as a pointer.
	base := *(*unsafe.Pointer)(unsafe.Pointer(&info.Data))
	return unix.Madvise(unsafe.Slice((*byte)(base), fi.Size()), unix.MADV_DONTNEED)
}
