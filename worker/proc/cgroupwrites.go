package proc

import "strconv"

// cgroupWrite is one value written to one control file of a cgroup.
type cgroupWrite struct {
	controller, file, value string
	optional                bool // the file may be missing (a kernel without swap accounting)
}

// cpuPeriod is the CFS bandwidth period, in microseconds: the kernel's
// default of 100 ms. A quota of CPUs cores is CPUs times it.
const cpuPeriod = 100000

// cgroupWrites gives the control files that set res in a cgroup of
// version (1 or 2), in the order they must be written. Swap counts against
// the memory limit (v1 memsw) or is forbidden (v2 swap.max), so that a job
// cannot go past its limit by swapping.
func cgroupWrites(version int, res Resources) []cgroupWrite {
	var w []cgroupWrite
	if m := res.MemoryBytes; m > 0 {
		v := strconv.FormatInt(m, 10)
		if version == 1 {
			w = append(w, cgroupWrite{"memory", "memory.limit_in_bytes", v, false},
				cgroupWrite{"memory", "memory.memsw.limit_in_bytes", v, true})
		} else {
			w = append(w, cgroupWrite{"memory", "memory.max", v, false},
				cgroupWrite{"memory", "memory.swap.max", "0", true})
		}
	}
	if res.Pids > 0 {
		w = append(w, cgroupWrite{"pids", "pids.max", strconv.FormatInt(res.Pids, 10), false})
	}
	if res.CPUs > 0 {
		// The weight grows with the cores lent: a job's cgroup competes with
		// the machine's other work as that many processes would, not as one
		// (the kernel's default weight is one process's).
		quota := strconv.FormatInt(max(int64(res.CPUs*cpuPeriod), 1000), 10) // the kernel's least quota is 1 ms
		if version == 1 {
			shares := strconv.FormatInt(min(max(int64(res.CPUs*1024), 2), 262144), 10)
			w = append(w, cgroupWrite{"cpu", "cpu.shares", shares, false},
				cgroupWrite{"cpu", "cpu.cfs_period_us", strconv.Itoa(cpuPeriod), false},
				cgroupWrite{"cpu", "cpu.cfs_quota_us", quota, false})
		} else {
			weight := strconv.FormatInt(min(max(int64(res.CPUs*100), 1), 10000), 10)
			w = append(w, cgroupWrite{"cpu", "cpu.weight", weight, false},
				cgroupWrite{"cpu", "cpu.max", quota + " " + strconv.Itoa(cpuPeriod), false})
		}
	}
	return w
}
