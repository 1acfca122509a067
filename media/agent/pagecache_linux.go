package agent

import (
	"os"

	"golang.org/x/sys/unix"
)

// dropWritten starts writeback of f's bytes [from, to) and drops from the
// page cache those of them already written back (POSIX_FADV_DONTNEED
// does both: pages still dirty or under writeback stay). A failure costs
// only the cache, so it is ignored.
func dropWritten(f *os.File, from, to int64) {
	if to > from {
		_ = unix.Fadvise(int(f.Fd()), from, to-from, unix.FADV_DONTNEED)
	}
}
