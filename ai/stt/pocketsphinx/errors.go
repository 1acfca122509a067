package pocketsphinx

import "errors"

// ErrModel means the decoder could not be created: a model path is wrong,
// the model files are missing (Debian package pocketsphinx-en-us) or the
// grammar does not parse.
var ErrModel = errors.New("pocketsphinx: cannot load the model")

// ErrUnknownWord is returned by New when a word of Config.Words is not in
// the pronunciation dictionary.
var ErrUnknownWord = errors.New("pocketsphinx: word not in the dictionary")

// ErrClosed is returned by Transcribe after Close.
var ErrClosed = errors.New("pocketsphinx: recognizer closed")

// ErrDecode means the decoder failed on the audio.
var ErrDecode = errors.New("pocketsphinx: decoding failed")
