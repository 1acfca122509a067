package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/pcm"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/media"
)

// recorder writes a call as a stereo WAV, the caller on the left, the
// agent on the right, at 16 kHz as 16-bit PCM, or at the call's own rate
// when that is lower: a G.711 call at 8 kHz as µ-law, which is what its
// two sides were on the wire (the telephone band needs no more; the file
// and its write-out are a quarter of 16 kHz PCM's), docs/decisions.md.
// The agent's ticks are the clock: each agent frame (silence too) is
// paired with the next caller frame, or with silence once more than 10
// agent frames (200 ms) wait for one (a caller who sends nothing, as in
// text sessions); caller audio that arrives faster than real time is
// written with agent silence once more than 25 frames (half a second)
// wait.
//
// Each side writes its frames straight into its own channel of the file's
// bytes, at its own position in the call's current 64 KB chunk (or the
// next one, when it runs ahead across the boundary), on whichever
// goroutine delivers them (for an RTP call both sides are the pacer): a
// frame is encoded once, where it is still in the cache, and no frame is
// kept aside to wait for its partner; a frame that waits is the half of
// its pair already written. Pairing is only the two positions: the side
// ahead may be its wait ahead, and beyond that the other side's channel
// gets silence. A chunk whose pairs are all written goes to a writer
// goroutine shared by many calls (Recorders), so neither the pacer nor
// the receive loop waits for the disk.
type recorder struct {
	f      *os.File
	format wav.Format
	fn     int // samples per frame at the file's rate
	// pair is the bytes of one frame of both channels; perChunk the pairs
	// in a chunk.
	pair, perChunk int
	// rs brings agent frames to the file's rate (pacer side), crs caller
	// frames (input side); nil where the rate is the file's already.
	rs  *resample.Resampler
	crs *resample.Resampler
	a16 []int16 // agent frame at the file's rate (pacer side)
	cIn []int16 // caller frame at the file's rate (input side)
	w   *Recorders
	sh  *recShard // set once by w.add

	// mu guards the pairing, the chunks and err: the pacer and the input
	// side hold it for a frame each, the writer to take full chunks.
	mu sync.Mutex
	// pos is how many frames the caller (0) and the agent (1) have
	// written since the recording began; base is the first frame of cur,
	// the chunk being filled (nil until a side writes into it), and next
	// the one after it, once the side ahead writes there.
	pos       [2]int64
	base      int64
	cur, next []byte
	ready     [][]byte // full chunks, oldest first
	lost      int64    // bytes dropped because the writer fell behind
	err       error    // the first error; nothing more is recorded after it
	stopped   bool

	// wmu serialises the file's writes (the shard writer's and close's)
	// and the fields below; it is taken before mu.
	wmu     sync.Mutex
	taken   [][]byte // the writer's chunks of this round
	hdr     []byte   // the WAV header, rewritten at close
	dataAt  int64    // where the data starts in the file: len(hdr)
	written int64    // data bytes in the file
	prev    int64    // where the write before the last one began (dropWritten)
}

const (
	// recChunk is the size of a recording chunk: one write(2) per chunk
	// (4 s of an 8 kHz call in µ-law, 1 s of a 16 kHz one).
	recChunk = 64 << 10
	// recMaxReady bounds the full chunks a call may have waiting for a
	// slow disk (32 s of an 8 kHz call); beyond it the newest is dropped
	// and close reports the loss.
	recMaxReady = 8
	// recAgentWait and recCallerWait are how many frames one side may
	// be ahead of the other before the other's channel gets silence.
	recAgentWait  = 10
	recCallerWait = 25
)

// The recorder's sides: the index of each in pos, and its channel.
const (
	recCaller = 0
	recAgent  = 1
)

// newRecorder creates the file and hands the recorder to one of w's
// writers: agent frames at rate, caller frames at inRate.
func newRecorder(w *Recorders, path string, rate, inRate int) (*recorder, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("agent: recording directory: %w", err)
	}
	fileRate := min(rate, media.Rate16k)
	enc := wav.PCM16
	if fileRate == media.Rate8k {
		enc = wav.ULaw
	}
	fn := media.SamplesPerFrame(fileRate)
	r := &recorder{format: wav.Format{Encoding: enc, SampleRate: fileRate, Channels: 2}, fn: fn,
		a16: make([]int16, fn), cIn: make([]int16, fn), w: w}
	r.pair = r.format.BlockAlign() * fn
	r.perChunk = recChunk / r.pair
	var err error
	if rate != fileRate {
		r.rs, err = resample.New(rate, fileRate, resample.QualityHigh)
	}
	if err == nil && inRate != fileRate {
		// For a 16 kHz input and an 8 kHz file the caller's audio came
		// from 8 kHz; QualityLow keeps its band (0.40 of 8 kHz is 3.2 kHz,
		// with G.711's 3.4 kHz edge rolled off, not aliased).
		r.crs, err = resample.New(inRate, fileRate, resample.QualityLow)
	}
	if err != nil {
		return nil, fmt.Errorf("agent: recording resampler: %w", err)
	}
	hdr, err := wav.AppendHeader(nil, r.format, 0)
	if err != nil {
		r.closeResamplers()
		return nil, fmt.Errorf("agent: recording: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		if _, err = f.Write(hdr); err != nil {
			f.Close()
		}
	}
	if err != nil {
		r.closeResamplers()
		return nil, fmt.Errorf("agent: recording: %w", err)
	}
	r.f, r.hdr, r.dataAt = f, hdr, int64(len(hdr))
	if err := w.add(r); err != nil {
		f.Close()
		os.Remove(path)
		r.closeResamplers()
		return nil, err
	}
	return r, nil
}

// tick records the agent's frame of this tick (nil: silent). Pacer side;
// it allocates nothing but a chunk, when the pool of free ones is empty.
func (r *recorder) tick(frame []int16) {
	var err error
	if frame != nil && r.rs != nil {
		frame, err = toFileRate(r.rs, r.a16, frame)
	}
	r.add(frame, err, recAgent)
}

// callerFrame records one caller frame: pcm at the input rate, or decoded
// when it is at the file's rate (a G.711 call's frame as decoded, which
// needs no resampler). Input side.
func (r *recorder) callerFrame(pcm, decoded []int16) {
	frame := pcm
	var err error
	switch {
	case r.crs == nil:
	case len(decoded) == r.fn:
		frame = decoded
	default:
		frame, err = toFileRate(r.crs, r.cIn, pcm)
	}
	r.add(frame, err, recCaller)
}

// toFileRate resamples one frame into dst, which holds a frame at the
// file's rate, and returns dst.
func toFileRate(rs *resample.Resampler, dst, src []int16) ([]int16, error) {
	k, err := rs.ProcessTo(dst, src)
	if err == nil && k != len(dst) {
		err = fmt.Errorf("%d samples out, not %d", k, len(dst))
	}
	return dst, err
}

// add writes one side's frame (nil: silence; rerr: its resampler failed)
// into its channel, and silence into the other side's once this side is
// more than its wait ahead.
func (r *recorder) add(frame []int16, rerr error, side int) {
	other, wait := recAgent, int64(recCallerWait)
	if side == recAgent {
		other, wait = recCaller, recAgentWait
	}
	r.mu.Lock()
	switch {
	case rerr != nil:
		r.fail(fmt.Errorf("agent: recording resampler: %w", rerr))
	case r.err != nil || r.stopped:
	default:
		r.put(side, frame)
		if r.pos[side]-r.pos[other] > wait {
			r.put(other, nil)
		}
		r.complete()
	}
	r.mu.Unlock()
}

// fail records the first error; the recording stops there. Under mu.
func (r *recorder) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// put writes side's next frame (nil: silence) into its channel, in cur or,
// a chunk ahead, in next. Under mu; a side is never a chunk ahead of
// base, since base moves only once both sides have filled cur.
func (r *recorder) put(side int, frame []int16) {
	i := int(r.pos[side] - r.base)
	c := &r.cur
	if i >= r.perChunk {
		c, i = &r.next, i-r.perChunk
	}
	if *c == nil {
		*c = r.w.chunks.get()[:r.perChunk*r.pair]
	}
	dst := (*c)[i*r.pair : (i+1)*r.pair]
	// The side behind writes into the frame the other has written and
	// keeps its bytes; the side ahead need not read the chunk's old ones.
	keep := r.pos[side] < r.pos[1-side]
	if r.format.Encoding == wav.ULaw {
		g711.EncodeULawStereoChannelTo(dst, side == recAgent, keep, frame)
	} else {
		pcm.PutStereoChannelTo(dst, side == recAgent, keep, frame)
	}
	r.pos[side]++
}

// complete hands cur on once both sides have filled it (dropping it, and
// counting the loss, when recMaxReady chunks wait already) and makes next
// the chunk being filled. Under mu.
func (r *recorder) complete() {
	if min(r.pos[recCaller], r.pos[recAgent]) < r.base+int64(r.perChunk) {
		return
	}
	if len(r.ready) >= recMaxReady {
		r.lost += int64(len(r.cur))
		r.w.chunks.put(r.cur)
	} else {
		r.ready = append(r.ready, r.cur)
	}
	r.cur, r.next = r.next, nil
	r.base += int64(r.perChunk)
}

// flush writes the full chunks waiting and reports whether there were
// any. The shard's writer; after close it does nothing.
func (r *recorder) flush() bool {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.mu.Lock()
	if r.stopped || len(r.ready) == 0 {
		r.mu.Unlock()
		return false
	}
	r.takeReady()
	err := r.err
	r.mu.Unlock()
	if err = r.writeTaken(err); err != nil {
		r.mu.Lock()
		r.fail(err)
		r.mu.Unlock()
	}
	return true
}

// takeReady moves the full chunks to taken for writeTaken. Under wmu and
// mu.
func (r *recorder) takeReady() {
	r.taken = append(r.taken[:0], r.ready...)
	clear(r.ready)
	r.ready = r.ready[:0]
}

// writeTaken writes the chunks in taken unless err is set already, gives
// them back to the pool and returns the first error. Under wmu.
func (r *recorder) writeTaken(err error) error {
	for _, c := range r.taken {
		if err == nil {
			err = r.write(c)
		}
	}
	r.w.chunks.put(r.taken...)
	clear(r.taken)
	r.taken = r.taken[:0]
	return err
}

// write appends one chunk to the file. After each write it asks the kernel
// to start writing the new bytes out and to drop the pages of the write
// before from the page cache (dropWritten), which by then are on disk: a
// recording is written once and read rarely, if ever, by this node, so
// its pages would only push other files out of the cache, and taking
// fresh pages costs more than reusing freed ones (on a VM that hands freed
// memory back to its host, 12 µs a page against 3: see docs/decisions.md).
// Under wmu.
func (r *recorder) write(c []byte) error {
	// The header for the longer data checks it against the format's limit
	// (the 32-bit RIFF sizes) before the file grows past it.
	if _, err := wav.AppendHeader(r.hdr[:0], r.format, r.written+int64(len(c))); err != nil {
		return fmt.Errorf("agent: recording: %d bytes after %d: %w", len(c), r.written, err)
	}
	at := r.dataAt + r.written
	k, err := r.f.Write(c)
	r.written += int64(k)
	if k > 0 {
		dropWritten(r.f, r.prev, r.dataAt+r.written)
		r.prev = at
	}
	if err != nil {
		return fmt.Errorf("agent: recording: %w", err)
	}
	return nil
}

func (r *recorder) closeResamplers() {
	if r.rs != nil {
		r.rs.Close()
	}
	if r.crs != nil {
		r.crs.Close()
	}
}

// close takes the recorder off its shard, writes what is left (a side's
// frames that wait for the other against silence) and finishes the file.
// The pacer and the input side must have stopped.
func (r *recorder) close() error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil
	}
	r.sh.remove(r)
	// The side behind gets silence up to the other: what waits for a
	// partner is written against it.
	end := max(r.pos[recCaller], r.pos[recAgent])
	if r.err == nil {
		for side := range r.pos {
			for r.pos[side] < end {
				r.put(side, nil)
			}
			r.complete()
		}
		if n := int(end - r.base); n > 0 {
			r.ready = append(r.ready, r.cur[:n*r.pair])
			r.cur = nil
		}
	}
	r.stopped = true
	r.takeReady()
	err, lost := r.err, r.lost
	r.mu.Unlock()

	err = r.writeTaken(err)
	r.closeResamplers()
	if err == nil {
		var hdr []byte
		if hdr, err = wav.AppendHeader(r.hdr[:0], r.format, r.written); err == nil {
			_, err = r.f.WriteAt(hdr, 0)
		}
		if err != nil {
			err = fmt.Errorf("agent: recording: header: %w", err)
		}
	}
	if cerr := r.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("agent: recording: %w", cerr)
	}
	if err == nil && lost > 0 {
		err = fmt.Errorf("agent: recording: the disk fell behind, %d bytes (%.1f s) lost",
			lost, float64(lost)/float64(r.format.SampleRate*r.format.BlockAlign()))
	}
	return err
}
