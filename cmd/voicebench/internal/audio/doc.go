// Package audio is what voicebench says and how it recognises it coming
// back: a Source (a prompt followed by silence, repeated, prepared once
// at every call rate and pre-encoded for every codec, so a thousand calls
// cost no encoding) and an Onset detector that finds the moment speech
// starts after silence in received audio.
//
// # Recovering delay
//
// Every cycle of the source starts speaking at a known sample. A receiver
// decodes what comes back and marks the first sample louder than
// Threshold after at least MinSilence of quiet; the sender knows when it
// sent the frame holding the source's own onset. The difference is the
// path's delay whatever happened to the audio on the way (relayed,
// echoed, transcoded to Opus and back, or recorded and played back by an
// agent), to a sample's precision when the path is bit-exact and within
// a fraction of a millisecond through codecs.
//
// # The default prompt
//
// prompt.wav is espeak-ng's "Hello, this is a voice bench test call."
// (2.86 s, 16 kHz, peak -6 dBFS), made with
//
//	espeak-ng -v en-us -s 165 --stdout "Hello, this is a voice bench test call." |
//	  sox -t wav - -r 16000 -b 16 -c 1 -e signed-integer prompt.wav gain -n -6
//
// and embedded, so runs do not depend on espeak-ng being installed.
package audio
