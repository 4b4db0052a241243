//go:build !unix

package testnet

import "time"

// processCPU is not measured off unix: every allocation reads 0.
func processCPU() time.Duration { return 0 }
