// Package jitter turns a stream of RTP packets that arrive late, early, out
// of order, twice or never into a steady 20 ms audio clock: an adaptive
// playout buffer (Buffer) and, on top of it, codec-aware playout with loss
// concealment (Playout).
//
// # Buffer
//
// A Buffer holds encoded packets keyed by extended RTP sequence number and
// decides, each time the consumer needs audio (Pop), whether to play the
// next packet, conceal a missing one, or wait. Time is injected: Push takes
// the packet's arrival time and Pop the consumer's clock, so tests replay a
// network exactly.
//
// The target delay adapts to the measured jitter. For every packet the
// buffer computes its relative transit time d = arrival - timestamp/clock;
// over the last two seconds the smallest d is the fastest path through the
// network and the spread above it is the jitter. The target is the 98th
// percentile of that spread plus a margin, clamped to [MinDelay, MaxDelay]
// (20-80 ms by default). The current delay is how long after the fastest
// possible arrival the packet now playing is played. The buffer moves the
// current delay towards the target only where it costs nothing audible:
//
//   - at a talkspurt start (marker bit, or a timestamp jump with no
//     sequence gap, as after silence suppression or DTX) it re-anchors
//     playout so the first packet plays exactly at the target;
//   - when the next packet is missing and the delay is below target, it
//     conceals without consuming (the delay grows by that frame and the
//     packet may still arrive) instead of declaring a loss;
//   - when the delay exceeds the target by more than a frame and the
//     following packet is already buffered, it drops one packet, at most
//     once per DropInterval (clock drift and jitter that has calmed down).
//
// Reordered packets are put back in order, duplicates are counted and
// dropped, packets arriving after their playout time are counted as late
// and dropped, and sequence numbers and timestamps are extended across
// their wraparound. A sequence or timestamp jump that cannot be a network
// effect (a sender restart) resynchronizes the buffer.
//
// # Playout
//
// A Playout pulls from a Buffer and fills exactly one 20 ms frame per call
// at the decoder's rate, decoding packets of any duration through a small
// PCM queue. Missing audio is concealed by the codec: Opus with its in-band
// FEC when the packet after a single loss is already buffered
// (opus.Decoder.DecodeFECTo) and its packet loss concealment otherwise
// (ConcealTo); G.711 with the pitch-repetition concealment of ITU-T G.711
// Appendix I (PLC), which fades to silence over 60 ms. RFC 3389 comfort
// noise packets become noise at the signalled level (CNG).
//
// # Concurrency and allocation
//
// Buffer, Playout, PLC and CNG belong to one stream and are not safe for
// concurrent use; the RTP session serializes Push and Pop with a mutex.
// After the first packets of a stream nothing allocates: packet slots keep
// their payload buffers and only grow them.
package jitter
