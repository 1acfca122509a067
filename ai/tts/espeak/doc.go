// Package espeak binds libespeak-ng, the offline speech synthesizer that
// voiced uses when no TTS key is configured.
//
// Today it lists the voices the installed espeak-ng data really has
// (Voices and Variants); synthesis lands in this package with the
// conversation engine.
//
// libespeak-ng keeps its state in C globals and is not thread-safe, so
// every call into it goes through one package mutex: that mutex mirrors
// the library's own process-wide state rather than adding Go state of its
// own. The library is initialized once, on first use, with the data
// directory compiled into it (or ESPEAK_DATA_PATH) and with
// espeakINITIALIZE_DONT_EXIT, so missing data is an error, never an exit.
package espeak
