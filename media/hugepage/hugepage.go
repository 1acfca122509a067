// Package hugepage backs a media node's hot memory with transparent huge
// pages where the kernel offers them only on request
// (/sys/kernel/mm/transparent_hugepage/enabled set to "madvise", the
// default of many distributions).
//
// Why: a node at a few hundred calls touches each call's state (its RTP
// session, jitter buffer, decoder, VAD, turn detector, recorder) once or
// twice a tick, and in between every other call's. That state is spread
// over the Go heap's 4 KB pages, tens of them per call, so each first
// touch of a tick misses the TLB as well as the cache; on a virtual
// machine a TLB miss walks two page tables (the guest's and the host's).
// With 2 MB pages the same heap is a few hundred TLB entries. Go's
// runtime asks for huge pages only for some of its own metadata (since Go
// 1.21.1 it leaves the heap to the system setting), hence this package.
//
// The price: memory is handed out in 2 MB steps where a region grows, and
// the runtime's scavenger, which returns free heap to the system 4 KB at
// a time, splits huge pages (khugepaged may merge them again later). For
// a node whose heap is steady, the price is small; --huge-pages=false
// turns it off. Elsewhere than Linux nothing happens.
package hugepage

import "errors"

// Size is the huge page size the package aligns to: 2 MB, the PMD size of
// x86-64 and of arm64 with 4 KB pages.
const Size = 2 << 20

// ErrUnsupported is returned where the system offers no transparent huge
// pages.
var ErrUnsupported = errors.New("hugepage: no transparent huge pages on this system")
