package proc

import (
	"bytes"
	"strconv"
)

// Memory use, for co-scheduling within memory: what a job's
// processes use now, read from its cgroup or, without one, from
// /proc/<pid>/status.

// maxMemPids bounds the processes walked for one job's resident memory.
const maxMemPids = 4096

// ParseVmRSS reads the VmRSS line of a /proc/<pid>/status file, in bytes;
// false when there is none (a kernel thread, a zombie) or it is malformed.
func ParseVmRSS(status []byte) (int64, bool) {
	for _, line := range bytes.Split(status, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 || kb > 1<<40 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// parseCounter reads a cgroup file holding one number (memory.current,
// memory.usage_in_bytes).
func parseCounter(b []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	return n, err == nil && n >= 0
}
