// Package opus encodes and decodes Opus (RFC 6716) with libopus, through
// github.com/hraban/opus (build with -tags nolibopusfile: the Ogg file
// reader is not used and libopusfile need not be installed).
//
// # Use
//
//	e, err := opus.NewEncoder(opus.EncoderConfig{SampleRate: 48000, FEC: true, DTX: true})
//	n, err := e.EncodeTo(pkt[:opus.MaxPacketSize], pcm) // 960 samples = 20 ms
//
//	d, err := opus.NewDecoder(48000, 1)
//	n, err := d.DecodeTo(pcm, pkt)        // a packet that arrived
//	n, err := d.DecodeFECTo(pcm[:960], next) // a lost one, from the packet after it
//	n, err := d.ConcealTo(pcm, 960)       // a lost one, no later packet yet
//
// The encoder runs libopus in VOIP mode, mono, at 48 or 16 kHz; its
// algorithmic delay is the 6.5 ms lookahead (312 samples at 48 kHz, 104 at
// 16 kHz; measured by TestRoundTrip). The decoder outputs any libopus rate,
// whatever the packet's own bandwidth. Encoders and decoders belong to one
// stream each and are not safe for concurrent use; their state lives in Go
// memory, so there is nothing to Close.
//
// # Loss and silence
//
// With FEC on (and a loss figure above zero, which the config defaults to
// 10%), each SILK or hybrid packet also carries a coarse copy of the previous
// frame. Measured on a voice-like signal with every 7th packet lost
// (TestFECBeatsPLC), the error energy of the lost frames is about 15 dB
// below the signal with DecodeFECTo, against about 3 dB below with
// ConcealTo alone. With DTX on, silence after a 200 ms hangover becomes 1-byte
// packets (IsDTX) apart from a comfort-noise update every 400 ms, and
// InDTX reports the encoder's DTX state.
//
// # Bad input
//
// DecodeTo checks a packet's framing (RFC 6716 section 3.4) in Go before
// libopus sees it, so a malformed packet gives ErrInvalidPacket naming the
// broken rule (FuzzOpusDecode checks that this check accepts exactly what
// libopus accepts). Wrong frame sizes give ErrFrameSize and short buffers
// ErrShortBuffer, with the sizes named; nothing panics. The per-frame calls
// EncodeTo, DecodeTo, DecodeFECTo and ConcealTo allocate nothing.
//
// # Why hraban/opus
//
// It exposes everything needed (VOIP mode, FEC, loss percentage, DTX and the
// DTX state, PLC by a nil packet, FEC decoding) without allocating on the
// per-frame calls, so no separate cgo binding is needed. Two quirks are
// handled here: it passes cap(dst), not len(dst), to libopus as the buffer
// size, so dst is always re-sliced with cap = len; and its InDTX allocates
// 4 bytes per call, so per-packet DTX decisions use IsDTX instead.
package opus
