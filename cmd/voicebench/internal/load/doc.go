// Package load is voicebench's load generator: it keeps N calls up
// against a Target, sends every call's RTP from one shared pacer, receives
// what comes back on a few batched sockets, and measures each call and
// each measurement window.
//
// # Sending
//
// One media/pace Pacer ticks every 20 ms / Phases; at each tick one
// Stream walks the calls of that phase and writes their next packet (a
// pre-encoded frame of the shared audio.Source behind a fresh RTP header)
// into per-socket batches sent with sendmmsg. No call has a goroutine or
// a timer for media, and nothing allocates per packet. Probed calls are
// sent first in each tick so the send time recorded for their onsets is
// within microseconds of the truth.
//
// # Receiving
//
// Calls share Lanes (UDP sockets, default 4): a call sends from one lane
// and receives on one (the same for echo and agent targets, the next one
// for relays, where the target forwards to a second leg). Each lane has
// one reader goroutine that takes packets in batches with kernel receive
// timestamps and finds the call by the packet's source port, or, when
// several calls share a source port (sipp echoes every call from one
// port), by the SSRC we sent. A lane's mutex, taken once per batch,
// guards every statistic of the calls it receives, so snapshots for
// windows and results are consistent without per-packet locking.
//
// # What is measured
//
// Per call: setup time, packets sent and received, RFC 3550 loss and
// interarrival jitter on the stream that comes back, the onset lag (see
// package audio) turned into a one-way delay according to the Topology,
// time to the first audio from the target, and an E-model MOS. Per window:
// the same aggregated, the distribution of per-packet transit differences
// |D| (the "p99 jitter" bound of --find-max), the target's CPU time from
// /proc, and the generator's own pacing lateness, so a generator that
// falls behind is visible rather than blamed on the target.
//
// |D| is RFC 3550's transit difference between consecutive packets. When
// the target returns our own packets (an echo, or a relay that does not
// transcode) it is computed from each packet's real send time instead of
// its RTP timestamp, so a late tick of the generator is not counted as
// the target's jitter; when the target sends its own stream (an agent, a
// transcoder) the RTP timestamps are the target's clock and are used.
package load
