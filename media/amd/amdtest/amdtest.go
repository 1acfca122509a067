// Package amdtest makes the audio answering-machine tests play: speech
// from espeak-ng (resampled by sox), silence, line noise and beeps, all
// 16-bit mono at a chosen rate. It needs the espeak-ng and sox programs
// (deploy/debian-deps.sh installs both).
package amdtest

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Speech returns text spoken by espeak-ng with voice (empty: its
// default) at rate Hz.
func Speech(t testing.TB, text, voice string, rate int) []int16 {
	t.Helper()
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	args := []string{"-w", wav}
	if voice != "" {
		args = append(args, "-v", voice)
	}
	if out, err := exec.Command("espeak-ng", append(args, text)...).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v: %s", err, out)
	}
	raw := filepath.Join(dir, "speech.raw")
	if out, err := exec.Command("sox", wav, "-t", "raw", "-e", "signed-integer", "-b", "16", "-c", "1", "-L",
		"-r", strconv.Itoa(rate), raw).CombinedOutput(); err != nil {
		t.Fatalf("sox: %v: %s", err, out)
	}
	b, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	pcm := make([]int16, len(b)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	if len(pcm) < rate/10 {
		t.Fatalf("espeak-ng made %d samples for %q", len(pcm), text)
	}
	return pcm
}

// Samples returns the number of samples of d at rate.
func Samples(d time.Duration, rate int) int { return int(d * time.Duration(rate) / time.Second) }

// Silence returns d of digital silence.
func Silence(d time.Duration, rate int) []int16 { return make([]int16, Samples(d, rate)) }

// Tone returns d of a sine of freq Hz at dbfs (RMS, as media.DBFS reads
// it) with 5 ms ramps at both ends, as answering machines beep.
func Tone(freq float64, d time.Duration, dbfs float64, rate int) []int16 {
	n := Samples(d, rate)
	amp := 32768 * math.Sqrt2 * math.Pow(10, dbfs/20)
	ramp := Samples(5*time.Millisecond, rate)
	out := make([]int16, n)
	for i := range out {
		g := 1.0
		if i < ramp {
			g = float64(i) / float64(ramp)
		} else if n-1-i < ramp {
			g = float64(n-1-i) / float64(ramp)
		}
		out[i] = int16(g * amp * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
	}
	return out
}

// Noise returns d of white Gaussian noise at dbfs (RMS), reproducible
// from seed.
func Noise(d time.Duration, dbfs float64, seed uint64, rate int) []int16 {
	r := rand.New(rand.NewPCG(seed, seed))
	sd := 32768 * math.Pow(10, dbfs/20)
	out := make([]int16, Samples(d, rate))
	for i := range out {
		out[i] = int16(max(-32768, min(32767, math.Round(r.NormFloat64()*sd))))
	}
	return out
}

// Concat joins pieces.
func Concat(pieces ...[]int16) []int16 {
	var out []int16
	for _, p := range pieces {
		out = append(out, p...)
	}
	return out
}

// AddNoise adds white noise at dbfs to pcm in place (line noise under a
// scene) and returns it.
func AddNoise(pcm []int16, dbfs float64, seed uint64) []int16 {
	r := rand.New(rand.NewPCG(seed, seed^1))
	sd := 32768 * math.Pow(10, dbfs/20)
	for i, v := range pcm {
		pcm[i] = int16(max(-32768, min(32767, math.Round(float64(v)+r.NormFloat64()*sd))))
	}
	return pcm
}

// Greeting is a typical answering-machine greeting, about 5 s spoken.
const Greeting = "Hi, you have reached the voicemail of John Smith. I am not available right now. Please leave your name and number after the tone."
