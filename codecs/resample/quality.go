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
	// QualityPhone is a half-band filter for upsampling by two (8 to
	// 16 kHz, 24 to 48 kHz), for telephone-band input such as G.711, whose
	// channel ends near 3.4 kHz (ITU-T G.712): every other output sample
	// is an input sample copied through, the rest take an inner product of
	// 32 taps (28 not zero), for a quarter of QualityLow's CPU and 28
	// samples of delay instead of 40. The passband reaches 0.425 of the input rate (3.4 kHz
	// at 8 kHz), flat within 0.01 dB, and images of it are rejected by at
	// least 60 dB; the transition band is symmetric about the input's
	// Nyquist frequency (0.425 to 0.575 of the input rate), so the image of
	// a tone between 0.425 and 0.50 of the input rate lands in 0.50 to
	// 0.575 of it (4 to 4.6 kHz at 8 kHz) only partly attenuated: by 30 dB
	// for a tone at 0.45 of the input rate (3.6 kHz at 8 kHz), by 6 dB at
	// the Nyquist frequency itself. Other pairs get QualityLow's filter.
	QualityPhone
)

// spec is the filter design of one quality: the passband edge as a fraction
// of the lower of the two rates (the stopband always starts at 0.5 of it,
// the lower Nyquist frequency) and the Kaiser design attenuation in dB.
type spec struct {
	passEdge    float64
	attenuation float64
	halfBand    bool // a half-band filter when upsampling by two
}

func (q Quality) spec() (spec, bool) {
	switch q {
	case QualityHigh:
		return spec{passEdge: 0.45, attenuation: 90}, true
	case QualityLow:
		return spec{passEdge: 0.40, attenuation: 65}, true
	case QualityPhone:
		return spec{passEdge: 0.425, attenuation: 65, halfBand: true}, true
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
	case QualityPhone:
		return "Phone"
	}
	return "Quality(?)"
}
