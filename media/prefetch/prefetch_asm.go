//go:build (amd64 || arm64) && !race

package prefetch

// Enabled says whether Line prefetches. Callers test it before computing
// addresses, so that without prefetching they read nothing.
const Enabled = true

// Line hints that the cache line holding address p will be read soon. p
// may be any address, 0 included: a prefetch never faults. An address,
// not a pointer: it need not point into a live object.
func Line(p uintptr)

// Lines4 is Line of four addresses in one call.
func Lines4(a, b, c, d uintptr)
