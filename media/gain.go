package media

import "math"

// Gain is a linear gain in Q15 fixed point: 32768 is unity (0 dB), 16384
// about -6 dB, 0 silence. Applying it is an integer multiply per sample,
// which measures faster than converting every sample to float and back.
type Gain int32

// Unity is a gain of 0 dB.
const Unity Gain = 1 << 15

// maxGainDB bounds GainFromDB so products stay within int64 and the
// gain within int32 (+48 dB is a factor of about 251).
const maxGainDB = 48

// GainFromDB converts decibels to a Gain, rounding to the nearest Q15 step.
// Gains above +48 dB are clamped to +48 dB; -Inf (or anything below about
// -96 dB) gives silence; NaN gives Unity so a bad setting cannot mute a
// call.
func GainFromDB(db float64) Gain {
	if math.IsNaN(db) {
		return Unity
	}
	db = min(db, maxGainDB)
	return Gain(math.Round(math.Pow(10, db/20) * float64(Unity)))
}

// DB returns the gain in decibels; -Inf for silence.
func (g Gain) DB() float64 {
	return 20 * math.Log10(float64(g)/float64(Unity))
}

// Apply scales frame in place by g, rounding to nearest and saturating.
func (g Gain) Apply(frame []int16) {
	if g == Unity {
		return
	}
	gg := int64(g)
	for i, s := range frame {
		v := (int64(s)*gg + 1<<14) >> 15
		frame[i] = int16(min(max(v, -32768), 32767))
	}
}

// ApplyGain scales frame in place by db decibels, as GainFromDB(db).Apply.
// Callers applying the same gain to every frame should keep the Gain and
// skip the per-call math.Pow.
func ApplyGain(frame []int16, db float64) {
	GainFromDB(db).Apply(frame)
}
