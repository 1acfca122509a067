// Package pocketsphinx transcribes speech offline with CMU PocketSphinx
// (libpocketsphinx 5prealpha, Debian libpocketsphinx-dev) and its American
// English model (Debian pocketsphinx-en-us): the stt.Transcriber voiced uses
// when no transcription key is configured.
//
// A Recognizer decodes with the model's statistical language model (open
// speech), or, far more accurately, with a JSGF grammar (Config.Grammar)
// or a word list (Config.Words) when the answers are known: digits, menu
// choices, yes and no.
//
// # Accuracy
//
// Measured on speech made by espeak-ng (the agent's own offline voice),
// segments cut with 300 ms of silence before and 500 ms after
// (TestDigits, TestCommandGrammar, BenchmarkSTTPocketsphinx), word accuracy
// (1 - word error rate) is:
//
//	                                en-us   en-us+f3   en-us+f2
//	digits grammar (110 digits)     82.7%   91.8%      96.9%
//	6-answer menu grammar           6/6     6/6        6/6
//	open language model (8 turns)   48-58%  37.5%      58.3%
//
// The segments hold digital silence (exact zeros), as clients send it.
// Each segment is dithered (+-1, a fixed sequence; Config.NoDither):
// without it, zero samples give frames of minus-infinite log energy that
// drag the cepstral mean, and open-model accuracy falls to 27-31% (en-us),
// 22.9% and 60.4% (TestLanguageModelDither). Figures move by several
// points between runs: the cepstral mean carries over between turns.
//
// The acoustic model was trained on human speech; espeak-ng's formant
// synthesis is far from it, the male voice most (its digits "nine" and
// "four" are heard as "one"). The open-model figures say little about human
// callers and much about why a grammar should be used when it can.
//
// # Streaming
//
// Recognizer.Stream and Pool.Stream decode a segment as its audio arrives
// (stt.Streamer), with partial hypotheses, so that only the end of the
// search is left when the caller stops: 34-108 ms with "-fwdflat no" (the
// offline default in package call), about 0.6 s with the second pass. Each
// stream's cepstral mean starts from the model's (-cmninit) weighted as 200
// ms and follows the stream's own audio every 50 ms; libpocketsphinx's own
// running mean starts at the model's weighted as 5 s and carries over from
// segment to segment, whoever spoke. A Recognizer that has streamed decodes
// whole segments the same way (the library keeps a running mean for good
// once a decoder streamed). A Pool's stream that finds every decoder held
// keeps its audio and takes one when one frees (see Pool.Stream).
//
// # Cost
//
// Loading takes 0.4 to 0.7 s and 95 MB of memory with the language model,
// 0.1 to 0.3 s and 30 MB with a grammar. Decoding runs at 0.37 of real time with the language
// model and 0.016 with the digits grammar (BenchmarkSTTPocketsphinx on this
// shared 2-core machine): a 3 s turn is transcribed in about 1.1 s or 50
// ms. A Recognizer decodes one segment at a time; run one per core for
// parallel calls. In noise the search keeps far more of itself alive: a
// stream cost 0.81 of a core per second of pink noisy audio against 0.41-0.45
// clean, 0.40 and 0.29 with "-maxhmmpf 3000" (the offline default in package
// call; BenchmarkSTTNoise, process CPU time).
package pocketsphinx
