// Package quality measures a call's media quality: counters the transport
// and the engine update as the call runs (Metrics, all atomics, safe from
// any goroutine and free of allocation), a consistent Snapshot at the end,
// and an estimate of the listening quality from those figures with the
// ITU-T G.107 E-model.
//
// # E-model
//
// The transmission rating is R = Ro - Is - Id - Ie,eff + A with the G.107
// default Ro - Is = 93.2 and A = 0:
//
//   - Id, the delay impairment, uses the common simplification of G.107's
//     delay terms for an echo-free connection (Cole and Rosenbluth, 2001):
//     Id = 0.024 Ta + 0.11 (Ta - 177.3) H(Ta - 177.3), Ta being the one-way
//     mouth-to-ear delay in ms;
//   - Ie,eff = Ie + (95 - Ie) Ppl / (Ppl/BurstR + Bpl) (G.107 section
//     7.5), with the codec's equipment impairment Ie and loss robustness
//     Bpl from ITU-T G.113 Appendix I, Ppl the packet loss in percent and
//     BurstR the burst ratio (1 for random loss);
//
// and MOS = 1 + 0.035 R + R (R-60) (100-R) 7e-6 (G.107 Annex B). G.711 with
// no loss and only its own 20 ms of delay scores R = 92.7, MOS 4.40; 5%
// random loss with concealment brings it to R = 76.9, MOS 3.90
// (TestMOSKnownPoints).
//
// G.113 gives no narrowband figures for Opus; Opus is rated here like
// G.711 with concealment (Ie 0, Bpl 25.1), which is conservative for
// wideband Opus with FEC. The estimate is a planning figure for comparing
// calls, not a listening test.
package quality
