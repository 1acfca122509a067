// Package resample converts mono PCM16 streams between 8000, 16000, 24000
// and 48000 Hz, frame by frame, with no clicks at frame boundaries. It also
// takes 22050 and 44100 Hz as input rates (espeak-ng synthesizes at 22050 Hz;
// media files come at 44100 Hz) and converts them to the four call rates.
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
//	22.05k->16k 441->320  22.05k->24k 441->480  44.1k->16k 882->320
//
// inRate/gcd is 441 samples (20 ms) from 22050 Hz to 8 or 16 kHz and 147
// samples to 24 or 48 kHz, twice that from 44100 Hz, so 20 ms frames and
// espeak-ng's 60 ms callback buffers come out exact; a chunk of another
// length from those rates cannot (441 input samples map to 320 outputs with
// no shorter whole ratio), and it gets the ragged-chunk rule below.
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
//	  22.05k->8k  58 (7.25)   22.05k->16k 58 (3.62)
//	  22.05k->24k 63 (2.62)   22.05k->48k 125 (2.60)
//	  44.1k->8k   58 (7.25)   44.1k->16k  58 (3.62)
//	  44.1k->24k  58 (2.42)   44.1k->48k  63 (1.31)
//	QualityLow: 8k->16k 40, 16k->8k 20, 24k->8k 20, 24k->16k 20,
//	  48k->16k 20, 16k->48k 60, 8k->48k 120 (2.5 ms, or 1.25 ms when the
//	  lower rate is 16 kHz or more)
//	QualityPhone: 8k->16k 28 (1.75 ms), 24k->48k 28 (0.58 ms); QualityLow's
//	  elsewhere
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
// 80% of the time (per-sample overheads stay). On amd64 CPUs with AVX2+FMA
// one assembly call runs a chunk's whole polyphase loop and vector
// instructions convert to and from int16 (upsampling by 6 instead computes
// all phases of one input window together); portable Go runs elsewhere; the
// two agree within one LSB (TestPortableMatchesFMA, testdata golden files).
// Outputs round to the nearest integer, ties to even, and saturate. The
// single assembly loop took QualityLow 24k->16k from 2.74 to 1.42 µs per
// 20 ms frame and 8k->16k from 1.90 to 1.23 µs (same run, benchstat over
// BenchmarkResampleLow).
//
// QualityPhone is for telephone-band input (G.711 received at 8 kHz):
// upsampling by two with a half-band filter, flat within 0.004 dB to 0.425
// of the input rate (3.4 kHz, the top of the telephone band) with images of
// that band at least 60 dB down (-66.6 dB measured, TestPhoneRejection);
// the transition is symmetric about the input's Nyquist frequency, so the
// image of a 3.6 kHz tone is only 30 dB down. Every other output is an
// input sample copied through; the rest come from one 32-tap FIR run
// across outputs (each coefficient broadcast into 32 outputs, no
// horizontal sums): 8k->16k costs 0.24 of QualityLow's time per 20 ms
// frame (2.47 to 0.59 µs, BenchmarkResamplePhone).
//
// The 22.05 and 44.1 kHz inputs meet the same bar (the 8 more pairs of those
// tests): QualityHigh's worst alias or image is -91.7 dB and the passband is
// flat within 0.0002 dB, QualityLow's are -64.8 dB and 0.0043 dB. Upsampling
// from 22050 Hz passes 0.45 of the input rate (9.9 kHz; the band above
// 11.025 kHz is empty there), which is 0.41 of a 24 kHz output. Their reduced
// ratios are long (320/441 for 22.05k->16k), so New designs a filter of 160
// or 320 phases: 1.4 to 4.5 ms and 250 to 620 KB per Resampler
// (BenchmarkNew), which a TTS stream pays once and reuses with Reset. Per
// 20 ms frame they cost 5 to 15 µs (BenchmarkResampleTTS).
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
