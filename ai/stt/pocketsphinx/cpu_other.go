//go:build !linux

package pocketsphinx

// lowerPriority does nothing off Linux, where a thread's priority is not
// its own: the decoding threads then only bound the threads running C.
func lowerPriority() {}

func threadNice() (int, error) { return 0, nil }
