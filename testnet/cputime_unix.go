//go:build unix

package testnet

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used so
// far: what an allocation costs the machine, a figure that holds up on a
// shared machine where wall times follow the other users' load.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
