// apm.h declares the C shim over libwebrtc-audio-processing 0.3 (the C++
// webrtc::AudioProcessing API) that package dsp calls through cgo. The shim
// exists so that one cgo call processes a whole frame (several 10 ms chunks)
// and so that Go never sees a C++ type.

#ifndef VOICED_DSP_APM_H
#define VOICED_DSP_APM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// voiced_apm_config mirrors dsp.Config after defaults are applied. Levels use
// the numeric values of the webrtc enums; -1 means the component is off.
typedef struct {
	int sample_rate;     // 8000, 16000, 32000 or 48000
	int ns_level;        // -1 off, else NoiseSuppression::Level (0 low .. 3 very high)
	int aec;             // 1 enables EchoCancellation
	int aec_level;       // EchoCancellation::SuppressionLevel (0 low .. 2 high)
	int agc;             // 1 enables GainControl in adaptive digital mode
	int agc_target_dbfs; // target level, dB below full scale (0..31)
	int agc_gain_db;     // maximum digital compression gain (0..90)
	int high_pass;       // 1 enables the 80 Hz high-pass filter
	int vad;             // 1 enables VoiceDetection
	int vad_likelihood;  // VoiceDetection::Likelihood (0 very low .. 3 high)
} voiced_apm_config;

// voiced_apm_result is what one voiced_apm_process_near call reports.
typedef struct {
	int chunks;          // 10 ms chunks processed
	int voiced_chunks;   // chunks the APM voice detector marked as speech
} voiced_apm_result;

typedef struct voiced_apm voiced_apm;

// voiced_apm_new returns a configured instance or NULL; *err receives the
// webrtc error code of the step that failed, and *step names it.
voiced_apm* voiced_apm_new(const voiced_apm_config* cfg, int* err, int* step);

// voiced_apm_process_far feeds n samples (a multiple of 10 ms) of the far-end
// reference. It returns 0 or a webrtc error code.
int voiced_apm_process_far(voiced_apm* a, const int16_t* samples, int n);

// voiced_apm_process_near processes n samples (a multiple of 10 ms) of
// near-end audio in place, setting delay_ms before each chunk when echo
// cancellation is on. It returns 0 or a webrtc error code.
int voiced_apm_process_near(voiced_apm* a, int16_t* samples, int n, int delay_ms, voiced_apm_result* res);

// voiced_apm_free releases the instance; a may be NULL.
void voiced_apm_free(voiced_apm* a);

#ifdef __cplusplus
}
#endif

#endif
