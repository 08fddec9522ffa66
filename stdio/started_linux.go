package stdio

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// processStarted is when the kernel created this process, from
// /proc/self/stat's starttime against /proc/uptime (10 ms resolution):
// earlier than the Go runtime's start, and so never later than a
// harness's first write into the pipe. It falls back to now.
func processStarted() time.Time {
	now := time.Now()
	stat, err1 := os.ReadFile("/proc/self/stat")
	up, err2 := os.ReadFile("/proc/uptime")
	if err1 != nil || err2 != nil {
		return now
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// fields are counted after its closing one. starttime is field 22.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return now
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 20 {
		return now
	}
	ticks, err1 := strconv.ParseUint(string(f[19]), 10, 64)
	upf := bytes.Fields(up)
	if err1 != nil || len(upf) == 0 {
		return now
	}
	uptime, err2 := strconv.ParseFloat(string(upf[0]), 64)
	if err2 != nil {
		return now
	}
	const userHZ = 100 // USER_HZ, fixed in the kernel's ABI
	age := time.Duration((uptime - float64(ticks)/userHZ) * float64(time.Second))
	if age < 0 || age > time.Hour {
		return now
	}
	return now.Add(-age)
}
