package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// neighDir holds the IPv4 neighbour (ARP) table's thresholds. The table is
// one for the whole kernel, every network namespace's entries counted
// against the host's gc_thresh3 (1024 by default): fifty containers that
// each talk to the others fill it, and then new connections fail where
// their next hop cannot be resolved ("neighbor table overflow" in dmesg).
const neighDir = "/proc/sys/net/ipv4/neigh/default"

// neighThresholds returns the gc_thresh2 (soft) and gc_thresh3 (hard)
// limits a testnet of n containers needs, given the current ones: room for
// every container to resolve every other on both its networks, never
// lower than what is set.
func neighThresholds(n, cur2, cur3 int) (int, int) {
	need := 2*n*n + 1024
	return max(cur2, need/2), max(cur3, need)
}

// ensureNeighbourRoom raises the host's neighbour table limits for n
// containers, if they are lower. It says what it changed; the limits are
// left raised after down (another testnet may be using them).
func ensureNeighbourRoom(n int, logf func(string, ...any)) error {
	cur := make([]int, 2)
	for i, f := range []string{"gc_thresh2", "gc_thresh3"} {
		b, err := os.ReadFile(filepath.Join(neighDir, f))
		if err != nil {
			return fmt.Errorf("docker: read %s: %w", f, err)
		}
		if cur[i], err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			return fmt.Errorf("docker: %s is %q: %w", f, b, err)
		}
	}
	t2, t3 := neighThresholds(n, cur[0], cur[1])
	if t2 == cur[0] && t3 == cur[1] {
		return nil
	}
	// thresh3 first: the kernel wants thresh2 <= thresh3 at every step.
	for _, w := range []struct {
		f string
		v int
	}{{"gc_thresh3", t3}, {"gc_thresh2", t2}} {
		if err := os.WriteFile(filepath.Join(neighDir, w.f), []byte(strconv.Itoa(w.v)), 0o644); err != nil {
			return fmt.Errorf("docker: raise the neighbour table for %d containers (%s=%d): %w", n, w.f, w.v, err)
		}
	}
	logf("raised the kernel's neighbour table to %d entries (gc_thresh3, was %d) for %d containers", t3, cur[1], n)
	return nil
}
