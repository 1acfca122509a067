package siptest

import (
	"encoding/binary"
	"fmt"
	"os"
	"time"

	"github.com/voiced/voiced/codecs/g711"
)

// WritePCMUPcap writes pcm (8 kHz mono) as a libpcap file of RTP packets
// for sipp's play_pcap_audio: PCMU (payload type 0), 20 ms (160
// samples) per packet, 20 ms apart, in Ethernet, IPv4 and UDP frames
// between two loopback ports (sipp sends the RTP to the call's media
// address whatever the frames say). A last partial frame is padded
// with silence.
func WritePCMUPcap(path string, pcm []int16) error { return WritePCMUPcapEvents(path, pcm) }

// Event is an RFC 4733 telephone-event in a pcap: code (0-9 the digits,
// 10 *, 11 #) from At for Duration.
type Event struct {
	At, Duration time.Duration
	Code         byte
}

// WritePCMUPcapEvents is WritePCMUPcap with telephone events (payload
// type 101) in the same stream: each event's packets take the place of
// the audio packets of its time (one sequence number each, the audio's
// timestamp at its start, marker on the first), the last three
// carrying the end bit, as RFC 4733 2.5.1.4 asks.
func WritePCMUPcapEvents(path string, pcm []int16, events ...Event) error {
	const (
		frame   = 160
		evLen   = 4
		rtpLen  = 12 + frame
		udpLen  = 8 + rtpLen
		ipLen   = 20 + udpLen
		linkLen = 14 + ipLen
	)
	n := (len(pcm) + frame - 1) / frame
	b := make([]byte, 0, 24+n*(16+linkLen))
	// Global header: magic, version 2.4, zone 0, sigfigs 0, snaplen,
	// link type 1 (Ethernet).
	b = binary.LittleEndian.AppendUint32(b, 0xa1b2c3d4)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 4)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 65535)
	b = binary.LittleEndian.AppendUint32(b, 1)
	samples := make([]int16, frame)
	// eventAt is the event under packet i: its index, and i's place in it
	// and its length in packets.
	eventAt := func(i int) (e, k, of int) {
		for e, ev := range events {
			first, of := int(ev.At/(20*time.Millisecond)), max(int(ev.Duration/(20*time.Millisecond)), 3)
			if i >= first && i < first+of {
				return e, i - first, of
			}
		}
		return -1, 0, 0
	}
	for i := range n {
		clear(samples)
		copy(samples, pcm[i*frame:])
		usec := uint32(i) * 20000
		e, k, of := eventAt(i)
		pay, pt := frame, byte(0)
		if e >= 0 {
			pay, pt = evLen, 101
		}
		b = binary.LittleEndian.AppendUint32(b, 1_700_000_000+usec/1_000_000)
		b = binary.LittleEndian.AppendUint32(b, usec%1_000_000)
		b = binary.LittleEndian.AppendUint32(b, uint32(linkLen-frame+pay))
		b = binary.LittleEndian.AppendUint32(b, uint32(linkLen-frame+pay))
		// Ethernet: destination, source, IPv4.
		b = append(b, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00)
		ip, ipl := len(b), ipLen-frame+pay
		b = append(b, 0x45, 0, byte(ipl>>8), byte(ipl), 0, 0, 0x40, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1)
		binary.BigEndian.PutUint16(b[ip+10:], ipChecksum(b[ip:ip+20]))
		// UDP 6000 -> 6002, no checksum.
		b = binary.BigEndian.AppendUint16(b, 6000)
		b = binary.BigEndian.AppendUint16(b, 6002)
		b = binary.BigEndian.AppendUint16(b, uint16(udpLen-frame+pay))
		b = binary.BigEndian.AppendUint16(b, 0)
		// RTP: version 2, marker on the first packet (and an event's
		// first), PT 0 or 101.
		m := byte(0)
		if i == 0 || e >= 0 && k == 0 {
			m = 0x80
		}
		b = append(b, 0x80, m|pt)
		b = binary.BigEndian.AppendUint16(b, uint16(i))
		if e >= 0 {
			// The event's start, its duration so far; the last three
			// packets end it with its full duration.
			b = binary.BigEndian.AppendUint32(b, uint32((i-k)*frame))
			b = binary.BigEndian.AppendUint32(b, 0x5eed1234)
			end, dur := byte(0), (k+1)*frame
			if k >= of-3 {
				end, dur = 0x80, (of-2)*frame
			}
			b = append(b, events[e].Code, end|10)
			b = binary.BigEndian.AppendUint16(b, uint16(dur))
			continue
		}
		b = binary.BigEndian.AppendUint32(b, uint32(i*frame))
		b = binary.BigEndian.AppendUint32(b, 0x5eed1234)
		start := len(b)
		b = append(b, make([]byte, frame)...)
		g711.EncodeULawTo(b[start:], samples)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write pcap: %w", err)
	}
	return nil
}

// ipChecksum is the IPv4 header checksum (RFC 791) of h, whose checksum
// field is zero.
func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
