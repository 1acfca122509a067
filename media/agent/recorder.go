package agent

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/media"
)

// recorder writes a call as a 16 kHz stereo WAV: the caller on the left,
// the agent on the right, one frame of each per caller frame, so both legs
// share the caller's clock. It is written by the input goroutine and
// finished by Close.
type recorder struct {
	f      *os.File
	bf     *bufferedFile
	w      *wav.Writer
	stereo []int16
	err    error
}

// bufferedFile buffers writes to a file and flushes before seeking, so the
// WAV writer's per-frame writes become a few large ones.
type bufferedFile struct {
	f  *os.File
	bw *bufio.Writer
}

func (b *bufferedFile) Write(p []byte) (int, error) { return b.bw.Write(p) }

func (b *bufferedFile) Seek(off int64, whence int) (int64, error) {
	if err := b.bw.Flush(); err != nil {
		return 0, err
	}
	return b.f.Seek(off, whence)
}

func newRecorder(path string) (*recorder, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("agent: recording directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("agent: recording: %w", err)
	}
	bf := &bufferedFile{f: f, bw: bufio.NewWriterSize(f, 64<<10)}
	w, err := wav.NewWriter(bf, wav.Format{Encoding: wav.PCM16, SampleRate: media.Rate16k, Channels: 2})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("agent: recording: %w", err)
	}
	return &recorder{f: f, bf: bf, w: w, stereo: make([]int16, 2*callerFrame)}, nil
}

// write records one caller frame and the agent frame heard with it (nil:
// silence). After a write error the recorder stops recording; close
// reports it.
func (r *recorder) write(caller, agent []int16) {
	if r.err != nil {
		return
	}
	for i, v := range caller {
		r.stereo[2*i] = v
		if agent != nil {
			r.stereo[2*i+1] = agent[i]
		} else {
			r.stereo[2*i+1] = 0
		}
	}
	r.err = r.w.WriteSamples(r.stereo)
}

// close finishes the file.
func (r *recorder) close() error {
	err := r.w.Close()
	if _, serr := r.bf.Seek(0, io.SeekCurrent); err == nil {
		err = serr
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	if r.err != nil {
		return r.err
	}
	return err
}
