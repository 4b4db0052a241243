package job

import "fmt"

// Bounds on a job's priority (submit --priority). The range is small on
// purpose: a priority is a rank among a grid's users, not a number to
// outbid each other with, and owners cap what they honour anyway.
const (
	MinPriority     = -100
	MaxPriority     = 100
	DefaultPriority = 0
)

// CheckPriority refuses a priority outside MinPriority..MaxPriority.
func CheckPriority(p int) error {
	if p < MinPriority || p > MaxPriority {
		return fmt.Errorf("priority: must be %d..%d, got %d", MinPriority, MaxPriority, p)
	}
	return nil
}

// checkMemPerProc refuses a negative or absurd per-process memory.
func checkMemPerProc(m int64) error {
	if m < 0 || m > MaxSize {
		return fmt.Errorf("mem_per_proc: must be 0..%d bytes, got %d", MaxSize, m)
	}
	return nil
}

// HeldMemory is the memory a host holds for a job offered slots
// processes there: the per-host requirement, or slots × the per-process
// declaration when that is more.
func HeldMemory(n Need, slots int) int64 {
	if n.MemPerProc > 0 && slots > 0 && n.MemPerProc > MaxSize/int64(slots) {
		return MaxSize
	}
	return max(n.Req.MinMemory, int64(slots)*n.MemPerProc)
}
