package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat:
// 100 on every Linux architecture (the kernel converts to it).
const clockTicks = 100

// ReadCPU returns the CPU time (user + system, every thread) pid has used
// so far, from /proc/PID/stat.
func ReadCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields after its closing one.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	// After the name: state is field 3, utime field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: unreadable utime/stime", pid)
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// cpuOf sums the CPU time of pids; ok is false when any is unknown (a
// remote node) or unreadable.
func cpuOf(pids []int) (time.Duration, bool) {
	var sum time.Duration
	for _, p := range pids {
		if p <= 0 {
			return 0, false
		}
		d, err := ReadCPU(p)
		if err != nil {
			return 0, false
		}
		sum += d
	}
	return sum, len(pids) > 0
}

// withCPU runs phase and returns its figures with the CPU the node
// processes pids spent during it, per successful operation, in
// milliseconds (0 when it cannot be measured).
func withCPU(pids []int, phase func() Stats) (Stats, float64) {
	before, ok1 := cpuOf(pids)
	st := phase()
	after, ok2 := cpuOf(pids)
	if !ok1 || !ok2 || st.Ops == 0 {
		return st, 0
	}
	return st, ms(after-before) / float64(st.Ops)
}
