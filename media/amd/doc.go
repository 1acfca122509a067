// Package amd is answering-machine detection for outbound calls: fed the
// callee's audio from the answer on, 20 ms at a time, a Detector says
// whether a person or a machine answered and, for a machine, when its
// beep has sounded and a message may be left.
//
// # Heuristics
//
// Speech is found by media/dsp's VAD (band energy above a tracked noise
// floor, so steady line noise reads as silence). On top of it the
// classic rules of answering-machine detection run:
//
//   - a person says a short greeting ("Hello?", 0.3-1.5 s) and then waits:
//     a greeting followed by AfterGreetingSilence of silence is Human;
//   - a machine talks on: a greeting longer than MaxGreeting (pauses
//     shorter than AfterGreetingSilence do not end it), or MaxWords
//     separate bursts of speech, is Machine;
//   - no speech for InitialSilence, or no verdict within MaxAnalysis, is
//     Unknown.
//
// After Machine the Detector keeps listening for the beep: a sustained
// pure tone of 400-2000 Hz lasting at least BeepMin. Each frame's tone
// frequency is fitted from its autocorrelation (a sinusoid's obeys
// r(k-1) + r(k+1) = 2cos(w) r(k); white line noise only adds to r(0),
// which the fit leaves out) and confirmed by Goertzel filters at and
// around that frequency, which must hold most of the frame's energy;
// the frequency must stay put from frame to frame. Speech, being many
// harmonics, and noise fail the energy test. Beeps are found down to
// about 11 dB above white line noise. Beep is reported when
// the tone stops (or after MaxBeep), the moment to start talking. A
// machine whose greeting ends without a beep is reported as
// GreetingEnded after EndSilence of silence (or BeepWait after Machine).
// A beep heard before Machine was decided (a short greeting) is Beep too.
//
// Two-tone and chirped beeps are not recognized as beeps; such machines
// end as GreetingEnded.
//
// # Cost
//
// Process allocates nothing and costs a few microseconds per frame
// (bench_test.go). A Detector is for one call and one goroutine.
package amd
