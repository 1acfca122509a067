package resample

// Quality selects the anti-aliasing filter of a Resampler. The zero value is
// QualityHigh.
type Quality int

const (
	// QualityHigh is the default: stopband rejection of at least 80 dB
	// (designed for 90 dB) starting exactly at the lower Nyquist frequency,
	// so no alias or image survives above it, and a passband flat within
	// 0.01 dB up to 0.45 of the lower of the two rates.
	QualityHigh Quality = iota
	// QualityLow trades rejection and bandwidth for 55 to 80% of the CPU:
	// at least 60 dB of stopband rejection (designed for 65 dB) from the
	// lower Nyquist frequency, and a passband flat within 0.01 dB up to 0.40
	// of the lower rate (3.2 kHz at 8 kHz, more than telephone bandwidth).
	QualityLow
)

// spec is the filter design of one quality: the passband edge as a fraction
// of the lower of the two rates (the stopband always starts at 0.5 of it,
// the lower Nyquist frequency) and the Kaiser design attenuation in dB.
type spec struct {
	passEdge    float64
	attenuation float64
}

func (q Quality) spec() (spec, bool) {
	switch q {
	case QualityHigh:
		return spec{passEdge: 0.45, attenuation: 90}, true
	case QualityLow:
		return spec{passEdge: 0.40, attenuation: 65}, true
	}
	return spec{}, false
}

// String returns the constant's name, for test and benchmark names.
func (q Quality) String() string {
	switch q {
	case QualityHigh:
		return "High"
	case QualityLow:
		return "Low"
	}
	return "Quality(?)"
}
