package agent

import (
	"os"

	"golang.org/x/sys/unix"
)

var pageSize = int64(os.Getpagesize())

// dropWritten starts writeback of f's bytes [from, to) and drops from the
// page cache those of them already written back (POSIX_FADV_DONTNEED
// does both: pages still dirty or under writeback stay). The kernel drops
// only pages wholly inside the range, so from is taken down to its page:
// the page it starts in also holds older bytes (a chunk that is not a
// whole number of pages, the header), which are on disk by then too. A
// failure costs only the cache, so it is ignored.
func dropWritten(f *os.File, from, to int64) {
	from -= from % pageSize
	if to > from {
		_ = unix.Fadvise(int(f.Fd()), from, to-from, unix.FADV_DONTNEED)
	}
}
