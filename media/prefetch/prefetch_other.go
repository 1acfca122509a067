//go:build !(amd64 || arm64) || race

package prefetch

// Enabled says whether Line prefetches. Callers test it before computing
// addresses, so that without prefetching they read nothing.
const Enabled = false

// Line does nothing here.
func Line(uintptr) {}

// Lines4 does nothing here.
func Lines4(_, _, _, _ uintptr) {}
