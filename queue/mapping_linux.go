package queue

import (
	"unsafe"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// releaseMapping drops the queue file's pages from this process's memory
// map (MADV_DONTNEED). bbolt maps the file and reads through the map, and
// the kernel maps the cached neighbours of every page a read faults in
// ("fault-around", up to 64 KiB): so the pages a start-up scan, a full
// listing or a stream of commits read stay counted in the process's RSS
// (RssFile) until bbolt next remaps, though nothing reads them again.
// After filling a queue with 100,000 small messages that was up to 242
// MiB of a 286 MB file. On a read-only shared file mapping MADV_DONTNEED
// loses nothing: the pages stay in the page cache, and a later read maps
// them again, so readers holding slices into the map are unaffected.
//
// tx must be open: it holds bbolt's map in place (a remap needs every
// transaction to end), and the range released is the data it can see,
// tx.Size(), which never passes the end of the map (bbolt maps at least
// every allocated page). The file's size can: it grows ahead of the map.
func releaseMapping(tx *bolt.Tx) error {
	info := tx.DB().Info()
	size := tx.Size()
	if size <= 0 || info.Data == 0 {
		return nil
	}
	// info.Data is the start of bbolt's mapping (not Go heap memory); read
	// its bits as a pointer.
	base := *(*unsafe.Pointer)(unsafe.Pointer(&info.Data))
	return unix.Madvise(unsafe.Slice((*byte)(base), size), unix.MADV_DONTNEED)
}
