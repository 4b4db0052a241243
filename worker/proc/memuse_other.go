//go:build !linux

package proc

// MemoryCurrent: no cgroups outside Linux.
func (b *Sandbox) MemoryCurrent() (int64, bool) { return 0, false }

// ResidentMemory: no /proc outside Linux; nothing is measured.
func ResidentMemory(pids []int) int64 { return 0 }
