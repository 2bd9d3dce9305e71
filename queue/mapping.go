package queue

// releaseEvery is how many pages of the queue file may be read into the
// process's map between two releases (releaseMapping): 16 MiB of 4 KiB
// pages. Reads map what commits just wrote (a commit reads the pages it
// rewrites, and the kernel maps their cached neighbours), so the pages
// written since the last release bound what the map holds beyond the
// pages in use. A release costs a walk of the map's page tables and the
// faults that map the pages in use again (the trees' upper levels, the
// last pages of the append-only buckets): at this spacing, a few a second
// under full load.
const releaseEvery = 4096

// pageBytes is the page size assumed when counting the pages a scan read.
const pageBytes = 4096

// mapped notes that reads may have mapped more pages of the file
// and releases the map once releaseEvery have added up. It takes its own
// read transaction: never call it inside one.
func (s *Store) mapped(pages int64) {
	if pages <= 0 || s.mapPages.Add(pages) < s.mapLimit {
		return
	}
	s.mapPages.Store(0)
	if err := s.view(releaseMapping); err != nil {
		s.opts.Logger.Debug("queue: could not release the file's pages from memory", "file", s.path, "err", err)
	}
}

// committedPages notes the pages written since the last call (the
// committer's, and a Draft's spilled chunks): reading them maps them.
// Only the committer goroutine calls it.
func (s *Store) committedPages() {
	st := s.db.Stats()
	n := st.TxStats.GetWrite()
	s.mapped(n - s.pagesWritten)
	s.pagesWritten = n
}

// scannedBytes notes a scan that read n bytes of records through the map
// (an operator's listing): its pages stay mapped though nothing
// reads them again until their mail is due.
func (s *Store) scannedBytes(n int) { s.mapped(int64(n / pageBytes)) }

// scannedAll notes a scan of every envelope (Select, scanShape): tens of
// megabytes on a big queue, released at once.
func (s *Store) scannedAll() { s.mapped(s.mapLimit) }

// releaseNow drops the map's pages at once (after the start-up scan).
func (s *Store) releaseNow() error {
	s.mapPages.Store(0)
	return s.view(releaseMapping)
}
