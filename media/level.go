package media

import "math"

// RMS returns the root mean square of frame in sample units (0 to 32768);
// 0 for an empty frame.
func RMS(frame []int16) float64 {
	if len(frame) == 0 {
		return 0
	}
	// Each square is below 2^30, so an int64 sum is exact for any frame
	// shorter than 2^33 samples.
	var sum int64
	for _, s := range frame {
		v := int64(s)
		sum += v * v
	}
	return math.Sqrt(float64(sum) / float64(len(frame)))
}

// DBFS returns the RMS level of frame in dB relative to full scale
// (RMS 32768, a full-scale square wave), as SoX's "RMS lev dB": a
// full-scale sine reads -3.01 dBFS. Silence and an empty frame give -Inf.
func DBFS(frame []int16) float64 {
	return 20 * math.Log10(RMS(frame)/32768)
}
