package espeak

/*
#cgo pkg-config: espeak-ng
#include <stdlib.h>
#include <espeak-ng/speak_lib.h>

static const espeak_VOICE **voiced_list_variants(void) {
	espeak_VOICE spec = {0};
	spec.languages = "variant";
	return espeak_ListVoices(&spec);
}
*/
import "C"

import (
	"sync"
	"unsafe"
)

// Gender is a voice's gender as espeak-ng's voice files declare it.
type Gender int

// The genders espeak-ng distinguishes.
const (
	GenderNone Gender = iota
	GenderMale
	GenderFemale
)

// String returns "male", "female" or "" for GenderNone.
func (g Gender) String() string {
	switch g {
	case GenderMale:
		return "male"
	case GenderFemale:
		return "female"
	}
	return ""
}

// Language is one language a voice may speak. A lower Priority means the
// voice is more preferred for it. Name is espeak-ng's spelling: a language
// code with optional lowercase qualifiers ("en-gb-x-rp").
type Language struct {
	Name     string
	Priority int
}

// Voice is one voice file of espeak-ng's data.
type Voice struct {
	// Name is the voice's given name, such as "English_(America)".
	Name string
	// Identifier is the voice file within espeak-ng-data/voices, such as
	// "gmw/en-US" or, for variants, "!v/f3". It selects the voice.
	Identifier string
	// Languages lists the languages the voice speaks, preferred first.
	// Variants list none: they apply to any language voice.
	Languages []Language
	Gender    Gender
	// Age is in years; 0 means not specified.
	Age int
}

var (
	// mu serializes every call into libespeak-ng (see the package doc).
	mu       sync.Mutex
	initDone bool
	initOK   bool
	// sampleRate is the library's output rate, from espeak_Initialize.
	sampleRate int
)

// initLocked initializes the library once; mu must be held.
func initLocked() error {
	if !initDone {
		initDone = true
		rate := C.espeak_Initialize(C.AUDIO_OUTPUT_SYNCHRONOUS, 0, nil, C.espeakINITIALIZE_DONT_EXIT)
		initOK = rate > 0
		sampleRate = int(rate)
	}
	if !initOK {
		return ErrUnavailable
	}
	return nil
}

// Voices lists the language voices of the installed espeak-ng data, in
// espeak-ng's order (by language).
func Voices() ([]Voice, error) {
	mu.Lock()
	defer mu.Unlock()
	if err := initLocked(); err != nil {
		return nil, err
	}
	return copyVoices(C.espeak_ListVoices(nil)), nil
}

// Variants lists the voice variants (pitch, formant and breath changes
// that combine with any language voice as "<voice>+<variant>").
func Variants() ([]Voice, error) {
	mu.Lock()
	defer mu.Unlock()
	if err := initLocked(); err != nil {
		return nil, err
	}
	return copyVoices(C.voiced_list_variants()), nil
}

// copyVoices copies the library's NULL-terminated voice table into Go
// memory; the table is owned by the library and reused by the next call.
func copyVoices(list **C.espeak_VOICE) []Voice {
	out := []Voice{}
	if list == nil {
		return out
	}
	for p := list; *p != nil; p = (**C.espeak_VOICE)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		v := *p
		out = append(out, Voice{
			Name:       C.GoString(v.name),
			Identifier: C.GoString(v.identifier),
			Languages:  parseLanguages(v.languages),
			Gender:     Gender(v.gender),
			Age:        int(v.age),
		})
	}
	return out
}

// parseLanguages decodes espeak-ng's language list: repeated (priority
// byte, NUL-terminated name), ended by an empty name.
func parseLanguages(p *C.char) []Language {
	var out []Language
	if p == nil {
		return out
	}
	b := unsafe.Pointer(p)
	for {
		prio := *(*byte)(b)
		if prio == 0 {
			return out
		}
		name := C.GoString((*C.char)(unsafe.Add(b, 1)))
		if name == "" {
			return out
		}
		out = append(out, Language{Name: name, Priority: int(prio)})
		b = unsafe.Add(b, 1+len(name)+1)
	}
}
