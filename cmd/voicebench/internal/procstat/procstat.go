// Package procstat reads CPU time from Linux /proc: a process's user and
// system time (all its threads, live and exited) and the host's busy and
// total time per core, so a benchmark can report the CPU a system under
// test used over a window and the load on the machine.
package procstat

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// tick is one clock tick (USER_HZ, 100 on every Linux architecture that
// voiced runs on).
const tick = 10 * time.Millisecond

// Process returns the CPU time pid has used. It sums the nanosecond
// run times of its live threads (/proc/<pid>/task/*/schedstat), which a
// short window needs; when the process's tick-resolution total from
// /proc/<pid>/stat (which also counts threads that have exited) is
// larger, that is returned instead, so the figure never undercounts by
// more than a tick.
func Process(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	ticks, err := parseStat(b)
	if err != nil {
		return 0, err
	}
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return ticks, nil
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited meanwhile
		}
		sum += parseSchedstat(b)
	}
	if sum+tick < ticks {
		return ticks, nil
	}
	return sum, nil
}

// parseSchedstat reads the first field of a schedstat line: time spent on
// the CPU, in ns.
func parseSchedstat(b []byte) time.Duration {
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(v)
}

// parseStat reads utime and stime (fields 14 and 15) from a stat line;
// the command name (field 2) may hold spaces and parentheses, so fields
// are counted after its last ')'.
func parseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: no ')' in stat", ErrFormat)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14 -> f[11], stime f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: %d fields after the command", ErrFormat, len(f))
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%w: utime %q stime %q", ErrFormat, f[11], f[12])
	}
	return time.Duration(u+s) * tick, nil
}

// Host is the machine's CPU time: all cores and each core, in ticks.
// Steal is time a virtual machine's core wanted to run and its
// hypervisor ran something else; it counts in Busy and Total.
type Host struct {
	Busy, Total, Steal             uint64
	CoreBusy, CoreTotal, CoreSteal []uint64
}

// ReadHost reads /proc/stat.
func ReadHost() (Host, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Host{}, err
	}
	return parseHost(b)
}

func parseHost(b []byte) (Host, error) {
	var h Host
	sc := bufio.NewScanner(bytes.NewReader(b))
	found := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "cpu") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 {
			return Host{}, fmt.Errorf("%w: %q", ErrFormat, line)
		}
		var total, idle, steal uint64
		for j, s := range f[1:] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return Host{}, fmt.Errorf("%w: %q", ErrFormat, line)
			}
			if j == 8 || j == 9 { // guest and guest_nice are already in user and nice
				continue
			}
			total += v
			switch j {
			case 3, 4: // idle, iowait
				idle += v
			case 7:
				steal = v
			}
		}
		if f[0] == "cpu" {
			h.Busy, h.Total, h.Steal, found = total-idle, total, steal, true
		} else {
			h.CoreBusy = append(h.CoreBusy, total-idle)
			h.CoreTotal = append(h.CoreTotal, total)
			h.CoreSteal = append(h.CoreSteal, steal)
		}
	}
	if !found {
		return Host{}, fmt.Errorf("%w: no cpu line", ErrFormat)
	}
	return h, nil
}

// Percent returns the busy share between two readings, 0-100 (of all
// cores together), and per core.
func Percent(a, b Host) (all float64, cores []float64) {
	all = pct(b.Busy-a.Busy, b.Total-a.Total)
	for i := range min(len(a.CoreBusy), len(b.CoreBusy)) {
		cores = append(cores, pct(b.CoreBusy[i]-a.CoreBusy[i], b.CoreTotal[i]-a.CoreTotal[i]))
	}
	return all, cores
}

// StealPercent returns the share of the time between two readings that
// the hypervisor took from the machine's cores, 0-100 (of all cores
// together), and per core. Outside a virtual machine (or where the
// hypervisor does not report it) it is 0.
func StealPercent(a, b Host) (all float64, cores []float64) {
	all = pct(b.Steal-a.Steal, b.Total-a.Total)
	for i := range min(len(a.CoreSteal), len(b.CoreSteal)) { // CoreTotal is as long: parseHost appends both
		cores = append(cores, pct(b.CoreSteal[i]-a.CoreSteal[i], b.CoreTotal[i]-a.CoreTotal[i]))
	}
	return all, cores
}

func pct(busy, total uint64) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(busy) / float64(total)
}
