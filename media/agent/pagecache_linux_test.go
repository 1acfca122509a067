package agent

import (
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/voiced/voiced/codecs/wav"
)

// resident counts the pages of f's bytes [from, to) in the page cache.
func resident(t *testing.T, f *os.File, from, to int64) int {
	t.Helper()
	b, err := unix.Mmap(int(f.Fd()), 0, int(to), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	page := int64(os.Getpagesize())
	vec := make([]byte, (to+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	n := 0
	for _, v := range vec[from/page:] {
		n += int(v & 1)
	}
	return n
}

// A recording's writes leave the page cache once they are on disk: the
// first chunk is dropped by a later write. (Whether the last one is still
// cached is the disk's timing, not the recorder's: DONTNEED keeps pages
// dirty or under writeback and drops the rest, and a fast virtual disk
// may have written the last chunk back before the advice; asserting it
// failed in CI.)
func TestRecordingLeavesPageCache(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "rec.wav"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	format := wav.Format{Encoding: wav.PCM16, SampleRate: 8000, Channels: 2}
	hdr, err := wav.AppendHeader(nil, format, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(hdr); err != nil {
		t.Fatal(err)
	}
	r := &recorder{f: f, format: format, hdr: hdr, dataAt: int64(len(hdr))}
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = byte(i)
	}
	size := int64(len(chunk))
	deadline := time.Now().Add(10 * time.Second)
	writes := 0
	for {
		if err := r.write(chunk); err != nil {
			t.Fatal(err)
		}
		writes++
		if r.written >= 3*size && resident(t, f, 0, size) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d writes the first 64 KB still has %d pages cached", writes, resident(t, f, 0, size))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r.written != int64(writes)*size {
		t.Fatalf("%d bytes written after %d writes of %d", r.written, writes, size)
	}
}

// The recorder's chunks are whole stereo frames, not whole pages (65280
// bytes at 8 kHz) and follow the header: the page where one write ends and
// the next begins leaves the cache too, not only the pages inside a write.
func TestRecordingLeavesPageCacheUnaligned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.wav")
	r, err := newRecorder(testRecorders(t), path, 8000, 8000)
	if err != nil {
		t.Fatal(err)
	}
	r.sh.remove(r) // this test writes, not the shard
	defer r.close()
	rf, err := os.Open(path) // the recorder's file is write-only; resident maps it
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	chunk := make([]byte, recChunk/640*640)
	size := int64(len(chunk))
	deadline := time.Now().Add(10 * time.Second)
	for writes := 1; ; writes++ {
		if err := r.write(chunk); err != nil {
			t.Fatal(err)
		}
		// All but the last two writes (the one before the last is
		// dropped by the next write) are out of the cache.
		old := r.dataAt + int64(writes-2)*size
		if writes >= 4 && resident(t, rf, 0, old) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d writes of %d bytes, %d pages before byte %d still cached", writes, size, resident(t, rf, 0, old), old)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
