package pocketsphinx

// SetDirect runs the decoder's C code on the calling goroutine's thread
// (true), as before the decoding threads, or on them (false).
func SetDirect(on bool) { direct.Store(on) }

// DecodeThreadNice returns the niceness of a decoding thread.
func DecodeThreadNice() (n int, err error) {
	onDecodeThread(func() { n, err = threadNice() })
	return n, err
}

// DecodeThreadCount is how many decoding threads the first decode starts.
var DecodeThreadCount = decodeThreadCount

// Loaded is how many Recognizers the pool has made.
func (p *Pool) Loaded() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.all)
}
