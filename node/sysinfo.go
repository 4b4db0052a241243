package node

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// fallbackMemory is offered when the machine's memory cannot be read.
const fallbackMemory = 1 << 30

// TotalMemory is the machine's memory in bytes (MemTotal of
// /proc/meminfo), or 1 GiB where that cannot be read.
func TotalMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return fallbackMemory
	}
	defer f.Close()
	n, err := parseMeminfo(f)
	if err != nil {
		log.Debugw("read /proc/meminfo", "err", err)
		return fallbackMemory
	}
	return n
}

// parseMeminfo returns MemTotal in bytes from /proc/meminfo's format.
func parseMeminfo(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("meminfo: bad MemTotal line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb <= 0 || kb > 1<<50 {
			return 0, fmt.Errorf("meminfo: bad MemTotal %q", f[0])
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("meminfo: %w", err)
	}
	return 0, fmt.Errorf("meminfo: no MemTotal")
}
