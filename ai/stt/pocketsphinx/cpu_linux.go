package pocketsphinx

import "golang.org/x/sys/unix"

// lowerPriority sets the calling thread's niceness to decodeNice. A
// failure leaves it at the process's: decoding then competes as before.
func lowerPriority() {
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), decodeNice)
}

// threadNice returns the calling thread's niceness.
func threadNice() (int, error) {
	// getpriority's raw value is 20 - nice.
	p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	return 20 - p, err
}
