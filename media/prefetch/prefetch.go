// Package prefetch asks the processor to start loading memory that is
// about to be used, so that a loop over many calls can overlap the cache
// misses of the next calls with the work of the current one.
//
// Why: a media node touches each call's state once or twice a tick (20
// ms), and in between every other call's, so each call's first touches
// miss the cache, and a chain of pointers (session, receive codec, jitter
// buffer, slot, payload) misses one link at a time. A prefetch does not
// wait for its line and never faults, so the pacer can ask for the lines
// of the calls ahead (the first link of the call two ahead, the second
// link of the next one, ...) while it runs the current call (media/pace's
// Prefetcher).
//
// Line is a hint: on architectures without a prefetch instruction here,
// and in race-detector builds (where the hints' unsynchronized reads of
// other goroutines' pointers would be reported), Enabled is false and
// callers skip their prefetching.
package prefetch
