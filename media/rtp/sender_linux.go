package rtp

/*
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// sender is one pacer worker's send thread (see the Go side). Go writes
// tail, due and asked, then the eventfd; the thread writes sent and err.
typedef struct {
	int ring;          // the worker's io_uring
	int wake;          // eventfd: one write per batch, or to stop
	uint32_t *sqTail;  // the ring's submission tail, shared with the kernel
	uint32_t tail;     // the tail to publish: the batch's last request + 1
	int64_t due;       // when to publish it, CLOCK_MONOTONIC ns
	uint32_t asked;    // batches handed over
	uint32_t sent;     // batches submitted (a futex word)
	int32_t err;       // the last failed enter's errno, 0 after a good one
	uint32_t stop;
	pthread_t thread;
} sender;

static void *sender_run(void *arg) {
	sender *s = arg;
	// Signals are the Go threads' to take.
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		uint64_t v;
		if (read(s->wake, &v, sizeof v) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
			return NULL;
		uint32_t asked = __atomic_load_n(&s->asked, __ATOMIC_ACQUIRE);
		int64_t due = s->due;
		struct timespec ts = {due / 1000000000, due % 1000000000};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		uint32_t from = __atomic_load_n(s->sqTail, __ATOMIC_RELAXED);
		__atomic_store_n(s->sqTail, s->tail, __ATOMIC_RELEASE);
		int32_t err = 0;
		for (uint32_t n = s->tail - from; n > 0;) {
			// Submit, do not wait: UDP sends complete during the call.
			long r = syscall(__NR_io_uring_enter, s->ring, n, 0, 0, NULL, 0);
			if (r > 0)
				n -= r;
			else if (r == 0)
				break;
			else if (errno != EINTR && errno != EAGAIN && errno != EBUSY) {
				err = errno;
				break;
			}
		}
		__atomic_store_n(&s->err, err, __ATOMIC_RELAXED);
		__atomic_store_n(&s->sent, asked, __ATOMIC_RELEASE);
		syscall(SYS_futex, &s->sent, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
	}
}

static int sender_start(sender *s) {
	// The thread takes the caller's scheduling class and priority (the
	// default of pthread attributes): SCHED_FIFO on a realtime pacer.
	return pthread_create(&s->thread, NULL, sender_run, s);
}

static void sender_join(sender *s) { pthread_join(s->thread, NULL); }
*/
import "C"

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sender is a pacer worker's send thread: a thread of C, outside the Go
// scheduler, that publishes a batch of queued sends in the worker's
// io_uring at the batch's time (one clock_nanosleep and one
// io_uring_enter per tick). The worker fills the submission queue during
// its Ticks and hands the batch over half a period early (AfterTicks with
// pace.Config.AlignSends); the packets leave on time even when the
// worker's goroutine then waits for a P, is preempted, or its wake-up was
// late, which a goroutine's own sleep before sending could not promise
// (it needs a P back to send). Its cost is a thread wake-up per worker
// and tick, not per packet (docs/decisions.md, "Sends on time without the
// Go scheduler").
//
// Handing over: the worker writes the tail and the time, counts the batch
// in asked and writes the eventfd; the thread sleeps to the time,
// publishes the tail, enters, and sets sent to asked. The ring is the
// worker's again (submit, reap, write a slot) once sent == asked (wait).
type sender struct {
	c *C.sender
}

// newSender starts a send thread for ring r, with the calling thread's
// scheduling class (a realtime pacer worker's: SCHED_FIFO).
func newSender(r *uring) (*sender, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	c := (*C.sender)(C.calloc(1, C.size_t(unsafe.Sizeof(C.sender{}))))
	c.ring = C.int(r.fd)
	c.wake = C.int(fd)
	c.sqTail = (*C.uint32_t)(unsafe.Pointer(r.sqTail))
	if e := C.sender_start(c); e != 0 {
		unix.Close(fd)
		C.free(unsafe.Pointer(c))
		return nil, fmt.Errorf("pthread_create: %w", syscall.Errno(e))
	}
	return &sender{c: c}, nil
}

func (s *sender) word(p *C.uint32_t) *uint32 { return (*uint32)(unsafe.Pointer(p)) }

// hand gives the thread the submission queue up to tail, to publish at
// due (CLOCK_MONOTONIC ns). The previous batch must be done (wait).
func (s *sender) hand(tail uint32, due int64) {
	s.c.tail = C.uint32_t(tail)
	s.c.due = C.int64_t(due)
	atomic.AddUint32(s.word(&s.c.asked), 1)
	s.kick()
}

// kick wakes the thread (its eventfd).
func (s *sender) kick() {
	b := [8]byte{1}
	_, _ = unix.Write(int(s.c.wake), b[:])
}

// wait returns when the last batch is submitted, with the error of its
// io_uring_enter, if any.
func (s *sender) wait() error {
	asked := atomic.LoadUint32(s.word(&s.c.asked))
	for {
		sent := atomic.LoadUint32(s.word(&s.c.sent))
		if sent == asked {
			break
		}
		// The thread wakes us when sent changes; a change in between
		// makes the futex return at once.
		ts := unix.NsecToTimespec(int64(10 * time.Millisecond))
		_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&s.c.sent)), C.FUTEX_WAIT_PRIVATE, uintptr(sent), uintptr(unsafe.Pointer(&ts)), 0, 0)
	}
	if e := atomic.LoadInt32((*int32)(unsafe.Pointer(&s.c.err))); e != 0 {
		return syscall.Errno(e)
	}
	return nil
}

// close stops the thread, after its batch, and frees it.
func (s *sender) close() {
	_ = s.wait()
	atomic.StoreUint32(s.word(&s.c.stop), 1)
	s.kick()
	C.sender_join(s.c)
	unix.Close(int(s.c.wake))
	C.free(unsafe.Pointer(s.c))
	s.c = nil
}
