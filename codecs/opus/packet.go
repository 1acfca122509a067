package opus

import "fmt"

// MaxPacketSize is a dst size that always holds EncodeTo's output: the
// largest packet of 60 ms is 3 frames of 1275 bytes plus 7 bytes of framing,
// and libopus recommends 4000 bytes (opus_encode documentation).
const MaxPacketSize = 4000

// maxFrameBytes is the largest compressed frame (RFC 6716 section 3.4, R2).
const maxFrameBytes = 1275

// IsDTX reports whether an encoded packet is a discontinuous-transmission
// frame: with DTX on, the encoder marks silence with packets of at most two
// bytes (a TOC byte and at most one more) that carry no audio, and the
// decoder turns them into comfort noise or silence.
func IsDTX(packet []byte) bool { return len(packet) <= 2 }

// tocDuration400 returns the duration of one frame of the packet's
// configuration in units of 2.5 ms (RFC 6716 section 3.1, Table 2).
func tocDuration400(toc byte) int {
	config := toc >> 3
	switch {
	case config < 12: // SILK-only: 10, 20, 40, 60 ms
		return [4]int{4, 8, 16, 24}[config&3]
	case config < 16: // Hybrid: 10, 20 ms
		return [2]int{4, 8}[config&1]
	}
	return [4]int{1, 2, 4, 8}[config&3] // CELT-only: 2.5, 5, 10, 20 ms
}

// PacketSamples returns the number of samples per channel that packet
// decodes to at rate Hz, after checking its framing against RFC 6716
// section 3.4 (requirements R1 to R7) as libopus does. It does not look
// inside the frames. A malformed packet gives an error wrapping
// ErrInvalidPacket that names the broken rule.
func PacketSamples(packet []byte, rate int) (int, error) {
	frames, err := packetFrames(packet)
	if err != nil {
		return 0, err
	}
	return frames * tocDuration400(packet[0]) * rate / 400, nil
}

// packetFrames validates the framing and returns the number of frames.
func packetFrames(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, ErrEmptyPacket
	}
	rest := len(p) - 1
	switch p[0] & 3 {
	case 0: // one frame
		if rest > maxFrameBytes {
			return 0, fmt.Errorf("%w: code 0 frame of %d bytes exceeds %d", ErrInvalidPacket, rest, maxFrameBytes)
		}
		return 1, nil
	case 1: // two frames of equal size
		if rest%2 != 0 {
			return 0, fmt.Errorf("%w: code 1 payload of %d bytes is not two equal frames", ErrInvalidPacket, rest)
		}
		if rest/2 > maxFrameBytes {
			return 0, fmt.Errorf("%w: code 1 frames of %d bytes exceed %d", ErrInvalidPacket, rest/2, maxFrameBytes)
		}
		return 2, nil
	case 2: // two frames, the first one's size coded
		n1, used, ok := frameLength(p[1:])
		if !ok {
			return 0, fmt.Errorf("%w: code 2 packet truncated in its frame length", ErrInvalidPacket)
		}
		rest -= used
		if n1 > rest {
			return 0, fmt.Errorf("%w: code 2 first frame of %d bytes exceeds the %d left", ErrInvalidPacket, n1, rest)
		}
		if rest-n1 > maxFrameBytes {
			return 0, fmt.Errorf("%w: code 2 second frame of %d bytes exceeds %d", ErrInvalidPacket, rest-n1, maxFrameBytes)
		}
		return 2, nil
	}
	// Code 3: a frame count byte, optional padding, CBR or VBR frames.
	if rest < 1 {
		return 0, fmt.Errorf("%w: code 3 packet without its frame count byte", ErrInvalidPacket)
	}
	fc := p[1]
	count := int(fc & 0x3f)
	if count == 0 {
		return 0, fmt.Errorf("%w: code 3 packet declares 0 frames", ErrInvalidPacket)
	}
	if d := count * tocDuration400(p[0]); d > 48 {
		return 0, fmt.Errorf("%w: code 3 packet of %d frames lasts %.1f ms, more than 120", ErrInvalidPacket, count, float64(d)*2.5)
	}
	i := 2
	rest--
	if fc&0x40 != 0 { // padding: bytes of 255 add 254 and continue
		for {
			if rest <= 0 {
				return 0, fmt.Errorf("%w: code 3 packet truncated in its padding length", ErrInvalidPacket)
			}
			b := int(p[i])
			i++
			rest--
			rest -= min(b, 254)
			if b != 255 {
				break
			}
		}
		if rest < 0 {
			return 0, fmt.Errorf("%w: code 3 padding longer than the packet", ErrInvalidPacket)
		}
	}
	if fc&0x80 == 0 { // CBR
		if rest%count != 0 {
			return 0, fmt.Errorf("%w: code 3 CBR payload of %d bytes is not %d equal frames", ErrInvalidPacket, rest, count)
		}
		if rest/count > maxFrameBytes {
			return 0, fmt.Errorf("%w: code 3 CBR frames of %d bytes exceed %d", ErrInvalidPacket, rest/count, maxFrameBytes)
		}
		return count, nil
	}
	last := rest
	for range count - 1 {
		n, used, ok := frameLength(p[i:min(len(p), i+rest)])
		if !ok {
			return 0, fmt.Errorf("%w: code 3 packet truncated in its frame lengths", ErrInvalidPacket)
		}
		i += used
		rest -= used
		if n > rest {
			return 0, fmt.Errorf("%w: code 3 frame of %d bytes exceeds the %d left", ErrInvalidPacket, n, rest)
		}
		last -= used + n
	}
	if last < 0 {
		return 0, fmt.Errorf("%w: code 3 frame lengths exceed the packet", ErrInvalidPacket)
	}
	if last > maxFrameBytes {
		return 0, fmt.Errorf("%w: code 3 last frame of %d bytes exceeds %d", ErrInvalidPacket, last, maxFrameBytes)
	}
	return count, nil
}

// frameLength decodes a one- or two-byte frame length (RFC 6716 section
// 3.2.1) and returns it with the number of bytes it used.
func frameLength(b []byte) (n, used int, ok bool) {
	switch {
	case len(b) < 1:
		return 0, 0, false
	case b[0] < 252:
		return int(b[0]), 1, true
	case len(b) < 2:
		return 0, 0, false
	}
	return int(b[0]) + 4*int(b[1]), 2, true
}
