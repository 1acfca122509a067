// The C side of synthesis: espeak-ng's callback is a plain C function, so
// this trampoline forwards each buffer to Go with the handle of the stream
// being synthesized. Every function here runs with the Go package mutex
// held, so the static below is only touched by one thread at a time.

#include <stdint.h>
#include <espeak-ng/speak_lib.h>
#include "_cgo_export.h"

// voiced_current is the cgo.Handle of the stream being synthesized, valid
// for the duration of one voiced_synth call.
static uintptr_t voiced_current;

static int voiced_synth_cb(short *wav, int n, espeak_EVENT *events) {
	(void)events;
	return voicedSynthChunk(wav, n, voiced_current);
}

int voiced_synth(const char *text, size_t size, uintptr_t handle) {
	voiced_current = handle;
	espeak_SetSynthCallback(voiced_synth_cb);
	espeak_ERROR rc = espeak_Synth(text, size, 0, POS_CHARACTER, 0, espeakCHARS_UTF8, NULL, NULL);
	voiced_current = 0;
	return (int)rc;
}
