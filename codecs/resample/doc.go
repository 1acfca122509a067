// Package resample converts mono PCM16 streams between 8000, 16000, 24000
// and 48000 Hz, frame by frame, with no clicks at frame boundaries.
//
// # Use
//
//	r, err := resample.New(8000, 16000, resample.QualityHigh)
//	defer r.Close()
//	n, err := r.ProcessTo(dst, frame) // 160 samples in, exactly 320 out
//
// A Resampler is stateful and belongs to one stream; it is not safe for
// concurrent use. Chunks may have any length: the output of a stream cut
// into chunks is bit for bit the output of the whole stream in one call.
// For a 20 ms frame (or any chunk that is a whole multiple of
// inRate/gcd(inRate, outRate) samples on such a boundary) ProcessTo writes
// exactly len(src)*outRate/inRate samples, from the first frame on:
//
//	8k->16k 160->320   16k->8k 320->160   24k->8k 480->160   24k->16k 480->320
//	48k->16k 960->320  16k->48k 320->960  8k->48k 160->960
//
// For ragged chunks the count per call varies by one sample around that
// ratio (never more than OutputLen) and the running total is exact. The
// steady state allocates nothing.
//
// # Delay
//
// The signal comes out delayed by Delay() output samples (the first Delay()
// samples of a stream are the filter starting from silence); Flush emits the
// last Delay() samples at the end of a stream. The delay is fixed per pair
// and quality; measured as the peak of the impulse response it equals
// Delay() exactly (TestDelayMatchesImpulse):
//
//	QualityHigh, output samples (ms):
//	  8k->16k 115 (7.19)   8k->24k 172 (7.17)   8k->48k 343 (7.15)
//	  16k->8k  58 (7.25)   16k->24k 86 (3.58)   16k->48k 172 (3.58)
//	  24k->8k  58 (7.25)   24k->16k 58 (3.62)   24k->48k 115 (2.40)
//	  48k->8k  58 (7.25)   48k->16k 58 (3.62)   48k->24k  58 (2.42)
//	QualityLow: 8k->16k 40, 16k->8k 20, 24k->8k 20, 24k->16k 20,
//	  48k->16k 20, 16k->48k 60, 8k->48k 120 (2.5 ms, or 1.25 ms when the
//	  lower rate is 16 kHz or more)
//
// # Filter
//
// Each pair runs one linear-phase polyphase FIR (L/M with L/M the reduced
// ratio) designed at New as a Kaiser-windowed sinc whose stopband starts
// exactly at half the lower rate, so no alias of a downsampled tone and no
// image of an upsampled one can land in the output band. QualityHigh is
// designed for 90 dB and passes 0.45 of the lower rate; QualityLow is
// designed for 65 dB and passes 0.40 of it. Measured on tones
// (TestAliasRejection, TestPassbandRipple, all 12 pairs): QualityHigh's worst
// alias or image is -91.2 dB and its passband is flat within 0.0002 dB;
// QualityLow's worst is -64.7 dB and it is flat within 0.004 dB, in 55 to
// 80% of the time (per-sample overheads stay). The inner products use
// AVX2+FMA on amd64 CPUs that have it (integer upsampling computes all
// phases of one input window together) and portable Go elsewhere; the two
// agree within one LSB (TestPortableMatchesFMA, testdata golden files).
//
// # Why not libsoxr
//
// libsoxr (internal/soxrref, benchmarked side by side) is a block-DFT
// resampler: at its HQ recipe, fed 20 ms frames, it outputs nothing for
// several frames and then a burst, holding back up to 115 ms at 8k->16k,
// 37 ms at 48k->16k and 175 ms at 8k->48k (the lag-ms metric of
// BenchmarkResampleSoxrHQ); its smallest DFT setting still holds back 15 to
// 63 ms. A 20 ms frame pipeline would have to buffer that much to never run
// dry, against this package's zero lag and 2.4 to 7.3 ms group delay. soxr
// spends 1.7 to 3.3 times less CPU per frame, but QualityHigh costs 3.4 to
// 9.2 µs per 20 ms frame on the call pairs (AVX2), under 0.05% of a core
// per stream.
//
// libspeexdsp (internal/speexref) streams frame by frame like this package.
// At quality 5 it takes 1.0 to 2.1 times as long as QualityHigh, leaves
// images at -52 dB when upsampling from 8 kHz and droops 1.85 dB at 0.45 of
// the lower rate when downsampling; at quality 10 it reaches similar
// rejection but takes 8 to 12 times as long. The figures (alias-dB,
// passband-dB and lag-ms next to ns/op) are printed by
//
//	go test -tags nolibopusfile -run '^$' -bench Resample -benchmem ./codecs/resample/
package resample
