// apm.cc implements apm.h over webrtc::AudioProcessing (libwebrtc-audio-processing 0.3).

#include "apm.h"

#include <string.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <webrtc/common.h>
#include <webrtc/modules/audio_processing/include/audio_processing.h>
#include <webrtc/modules/interface/module_common_types.h>

// Step codes reported by voiced_apm_new; dsp/processor.go names them.
enum {
	kStepCreate = 1,
	kStepInitialize = 2,
	kStepHighPass = 3,
	kStepNoise = 4,
	kStepEcho = 5,
	kStepGain = 6,
	kStepVoice = 7,
};

// FlushDenormals sets the SSE flush-to-zero and denormals-are-zero modes
// for its lifetime and restores the caller's mode after: the APM's filters
// decay into denormal floats on quiet input, where arithmetic is many times
// slower. Go code never runs while it is set.
struct FlushDenormals {
#if defined(__SSE__)
	unsigned saved;
	FlushDenormals() : saved(_mm_getcsr()) { _mm_setcsr(saved | 0x8040); }
	~FlushDenormals() { _mm_setcsr(saved); }
#endif
};

struct voiced_apm {
	webrtc::AudioProcessing* apm;
	webrtc::AudioFrame near;   // reused for every near chunk
	webrtc::AudioFrame far;    // reused for every far chunk
	int chunk;                 // samples per 10 ms
	int rate;
	bool aec;
	bool vad;
};

static void init_frame(webrtc::AudioFrame* f, int rate, int chunk) {
	f->sample_rate_hz_ = rate;
	f->num_channels_ = 1;
	f->samples_per_channel_ = chunk;
}

extern "C" voiced_apm* voiced_apm_new(const voiced_apm_config* cfg, int* err, int* step) {
	*err = 0;
	*step = 0;
	webrtc::Config wc;
	// The experimental AGC drives an analog microphone level we do not have;
	// the digital AGC below is used alone.
	wc.Set<webrtc::ExperimentalAgc>(new webrtc::ExperimentalAgc(false));
	// The 128 ms extended filter tolerates an echo delay hint that is up to
	// ~100 ms short. Delay-agnostic mode is left off: in this version it
	// loses the echo beyond ~200 ms, while a reported delay works to ~450 ms
	// (measured in processor_test.go).
	wc.Set<webrtc::ExtendedFilter>(new webrtc::ExtendedFilter(true));
	webrtc::AudioProcessing* apm = webrtc::AudioProcessing::Create(wc);
	if (apm == NULL) {
		*err = webrtc::AudioProcessing::kCreationFailedError;
		*step = kStepCreate;
		return NULL;
	}
	int rc = apm->Initialize(cfg->sample_rate, cfg->sample_rate, cfg->sample_rate,
	                         webrtc::AudioProcessing::kMono, webrtc::AudioProcessing::kMono,
	                         webrtc::AudioProcessing::kMono);
	if (rc != 0) {
		*err = rc;
		*step = kStepInitialize;
		delete apm;
		return NULL;
	}
	if (cfg->high_pass && (rc = apm->high_pass_filter()->Enable(true)) != 0) {
		*err = rc;
		*step = kStepHighPass;
		delete apm;
		return NULL;
	}
	if (cfg->ns_level >= 0) {
		rc = apm->noise_suppression()->set_level(
		    static_cast<webrtc::NoiseSuppression::Level>(cfg->ns_level));
		if (rc == 0) rc = apm->noise_suppression()->Enable(true);
		if (rc != 0) {
			*err = rc;
			*step = kStepNoise;
			delete apm;
			return NULL;
		}
	}
	if (cfg->aec) {
		webrtc::EchoCancellation* ec = apm->echo_cancellation();
		rc = ec->enable_drift_compensation(false);
		if (rc == 0) rc = ec->set_suppression_level(
		    static_cast<webrtc::EchoCancellation::SuppressionLevel>(cfg->aec_level));
		if (rc == 0) rc = ec->Enable(true);
		if (rc != 0) {
			*err = rc;
			*step = kStepEcho;
			delete apm;
			return NULL;
		}
	}
	if (cfg->agc) {
		webrtc::GainControl* gc = apm->gain_control();
		rc = gc->set_mode(webrtc::GainControl::kAdaptiveDigital);
		if (rc == 0) rc = gc->set_target_level_dbfs(cfg->agc_target_dbfs);
		if (rc == 0) rc = gc->set_compression_gain_db(cfg->agc_gain_db);
		if (rc == 0) rc = gc->enable_limiter(true);
		if (rc == 0) rc = gc->Enable(true);
		if (rc != 0) {
			*err = rc;
			*step = kStepGain;
			delete apm;
			return NULL;
		}
	}
	if (cfg->vad) {
		webrtc::VoiceDetection* vd = apm->voice_detection();
		rc = vd->set_likelihood(static_cast<webrtc::VoiceDetection::Likelihood>(cfg->vad_likelihood));
		if (rc == 0) rc = vd->set_frame_size_ms(10);
		if (rc == 0) rc = vd->Enable(true);
		if (rc != 0) {
			*err = rc;
			*step = kStepVoice;
			delete apm;
			return NULL;
		}
	}

	voiced_apm* a = new voiced_apm;
	a->apm = apm;
	a->rate = cfg->sample_rate;
	a->chunk = cfg->sample_rate / 100;
	a->aec = cfg->aec != 0;
	a->vad = cfg->vad != 0;
	init_frame(&a->near, a->rate, a->chunk);
	init_frame(&a->far, a->rate, a->chunk);
	return a;
}

extern "C" int voiced_apm_process_far(voiced_apm* a, const int16_t* samples, int n) {
	FlushDenormals ftz;
	const size_t bytes = a->chunk * sizeof(int16_t);
	for (int off = 0; off + a->chunk <= n; off += a->chunk) {
		memcpy(a->far.data_, samples + off, bytes);
		init_frame(&a->far, a->rate, a->chunk);
		int rc = a->apm->ProcessReverseStream(&a->far);
		if (rc != 0) return rc;
	}
	return 0;
}

extern "C" int voiced_apm_process_near(voiced_apm* a, int16_t* samples, int n, int delay_ms,
                                       voiced_apm_result* res) {
	FlushDenormals ftz;
	const size_t bytes = a->chunk * sizeof(int16_t);
	res->chunks = 0;
	res->voiced_chunks = 0;
	for (int off = 0; off + a->chunk <= n; off += a->chunk) {
		memcpy(a->near.data_, samples + off, bytes);
		init_frame(&a->near, a->rate, a->chunk);
		if (a->aec) {
			// A clamped delay returns kBadStreamParameterWarning; the value was
			// validated in Go, so only hard errors matter here.
			int rc = a->apm->set_stream_delay_ms(delay_ms);
			if (rc < 0 && rc != webrtc::AudioProcessing::kBadStreamParameterWarning) return rc;
		}
		int rc = a->apm->ProcessStream(&a->near);
		if (rc != 0 && rc != webrtc::AudioProcessing::kBadStreamParameterWarning) return rc;
		memcpy(samples + off, a->near.data_, bytes);
		res->chunks++;
		if (a->vad && a->apm->voice_detection()->stream_has_voice()) res->voiced_chunks++;
	}
	return 0;
}

extern "C" void voiced_apm_free(voiced_apm* a) {
	if (a == NULL) return;
	delete a->apm;
	delete a;
}
