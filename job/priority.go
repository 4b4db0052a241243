package job

import (
	"fmt"
	"time"
)

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

// CheckSwapSlice refuses a swap slice that is negative, or positive and
// shorter than MinSwapSlice (a switch would cost more than the slice), or
// longer than MaxSwapSlice.
func CheckSwapSlice(d time.Duration) error {
	if d != 0 && (d < MinSwapSlice || d > MaxSwapSlice) {
		return fmt.Errorf("swap_slice: must be 0 (never swapped for a job of equal priority) or %v..%v, got %v",
			MinSwapSlice, MaxSwapSlice, d)
	}
	return nil
}

// MinSwapSlice is the shortest swap slice: a switch costs a checkpoint
// and a restart, a second or more.
const MinSwapSlice = time.Second
