// Package pace is the node-wide send clock: one goroutine that wakes every
// 20 ms and calls Tick on every registered Stream, so each call's next RTP
// packet (or any other paced frame) leaves on time without a ticker or a
// goroutine per call (DESIGN.md sections 3 and 4).
//
// # Schedule
//
// Tick n is due at base+n*Period, where base is a monotonic clock reading
// taken when the Pacer starts, so lateness never accumulates into drift: a
// tick that starts 3 ms late is followed by one 17 ms later. When the loop
// falls more than a period behind (a long garbage-collection pause, an
// overloaded machine), it catches up without a burst: missed ticks run at
// most one per MinGap (a quarter period by default) until the schedule is
// met again, and a backlog larger than MaxLag is dropped and counted as
// Skipped rather than replayed, so receivers never see a burst of more
// than one packet per MinGap from any stream.
//
// The runtime's timers wake through epoll, in whole milliseconds, so a tick
// on the timer alone starts up to a millisecond late; Config.PreciseWake
// sleeps the last millisecond with nanosleep instead, for a media node
// whose every packet would carry that lateness as jitter. On Linux it also
// arms a timerfd behind the timer, which gets the tick past the GC's idle
// marking: with one P that would otherwise hold it for a whole mark phase.
//
// Config.AlignSends starts the Ticks half a period ahead of the tick's time
// and gives each Worker's AfterTicks (the node's batched sends) that time,
// which media/rtp's send thread keeps outside the Go scheduler, so the
// packets leave at the same instant every period whatever the Ticks before
// them cost and however late the Go scheduler ran them.
//
// Config.NewWorker gives each worker a Worker, run after its share's Ticks
// and before its PostTicks: where a kind of stream finishes together what
// its Ticks gathered (media/rtp sends a tick's packets through one
// io_uring).
//
// # Cost per tick
//
// A tick is one tight loop over a dense slice of streams: no goroutine,
// channel or allocation per stream. By default one goroutine runs it all;
// Config.Workers spreads the streams over several goroutines driven by the
// same clock (one wake-up per worker per tick), for nodes whose per-stream
// work outgrows one core (the telephony node: one worker per core).
// Each Tick runs on its worker goroutine and must be short and
// non-blocking: pull or dequeue a frame, encode it, write it to a UDP
// socket. A stream that is also a PostTicker gets a second call in the
// same tick, after every Tick of its share: that is where a call's media
// node drains its socket and processes the frame it received (media/rtp),
// so a call costs no goroutine wake-up of its own, while the sends keep
// their place at the front of the tick. A Tick or PostTick that panics is
// recovered, counted and unregistered, so one broken stream cannot stop
// the clock of every call on the node.
//
// # Concurrency
//
// Register and Unregister may be called from any goroutine except from
// inside a Tick (a worker holds its share's lock while ticking; Unregister
// from a Tick would deadlock). When Unregister returns, the stream's Tick is not
// running and will not run again, so the caller may release what Tick
// uses. Stats is safe at any time.
package pace
