// Package espeak binds libespeak-ng, the offline speech synthesizer that
// voiced uses when no TTS key is configured: it lists the voices the
// installed espeak-ng data really has (Voices and Variants) for the voice
// catalog, and speaks text (Synth, a tts.Synthesizer).
//
// # Concurrency
//
// libespeak-ng keeps its state in C globals and is not thread-safe, so
// every call into it goes through one package mutex: that mutex mirrors
// the library's own process-wide state rather than adding Go state of its
// own. The library is initialized once, on first use, with the data
// directory compiled into it (or ESPEAK_DATA_PATH), in synchronous mode and
// with espeakINITIALIZE_DONT_EXIT, so missing data is an error, never an
// exit.
//
// A Synth owns one goroutine that takes requests from a queue in order and
// synthesizes each with the mutex held: one synthesis at a time per
// process, whatever the number of Synths. The library calls back every
// 60 ms of audio (1323 samples at its 22050 Hz); each buffer is appended to
// the request's stream at once, so the first audio is readable about 2 ms
// after the request, long before a long text is done, and the reader
// converts it to the requested rate (tts.Resample, no allocation per frame).
// Synthesis never waits for the reader: a request's audio is buffered whole
// if it is read slowly, so one slow call never holds the library.
//
// Measured on this machine (2 cores, shared; BenchmarkTTSEspeak), a 7.5 s
// two-sentence answer takes 16 ms including the conversion to 16 kHz: a
// real-time factor of 0.002, first audio after 1.6 ms. One synthesizer
// thus keeps up with some 400 calls speaking at the same time; past that,
// requests wait in the queue (Config.Queue, then ErrBusy) and first-audio
// latency grows with the queue.
//
// Closing a request's Audio (or ending its context) stops its synthesis at
// the next 60 ms buffer, or before it starts if it is still queued.
//
// # Determinism
//
// The first request of a process is sample for sample what the espeak-ng
// command gives (with -z). Later ones are the same speech but not the same
// samples: the library's pitch flutter and noise generators carry their
// phase from one text to the next, which moves glottal periods by a few
// samples (durations vary by up to 2%), and the first text after a change
// of language can pause some 40 ms longer at a comma. MBROLA voices (mb/...)
// are listed by Voices but never selected: they need the mbrola program.
package espeak
