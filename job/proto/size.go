package proto

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxSize bounds any size written by a user: 1 PiB is more memory than any
// host has, and keeps sums far from overflow.
const MaxSize int64 = 1 << 50

// sizeUnits are binary multiples, as memory is counted (and as Java -Xmx or
// docker --memory read them): K = 1024.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}

// ParseSize reads a byte count such as "2G", "512M", "1.5GiB" or "4096".
// Units are binary (K = 1024) and case-insensitive; the result is at most
// MaxSize and rounded down to a whole byte.
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	mult, ok := sizeUnits[t[i:]]
	if i == 0 || !ok {
		return 0, fmt.Errorf("size %q: want a number with an optional unit K, M, G or T", s)
	}
	v, err := strconv.ParseFloat(t[:i], 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("size %q: bad number", s)
	}
	b := v * float64(mult)
	if b > float64(MaxSize) {
		return 0, fmt.Errorf("size %q: more than the limit of %d bytes", s, MaxSize)
	}
	return int64(b), nil
}

// FormatSize writes a byte count in the largest binary unit that divides it
// exactly, so that ParseSize(FormatSize(n)) == n.
func FormatSize(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n != 0 && n%u.m == 0 {
			return strconv.FormatInt(n/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

// SiteLabelPrefix starts the host label that names its site.
const SiteLabelPrefix = "site="

// SiteLabel is the site named by a host's labels ("site=nancy" gives
// "nancy"), or "" when none does; the first such label wins.
func SiteLabel(labels []string) string {
	for _, l := range labels {
		if name, ok := strings.CutPrefix(l, SiteLabelPrefix); ok && SiteName(name) != "" {
			return name
		}
	}
	return ""
}

// SiteName is name if it can be a site label's ("site=" + name, within a
// label's length), else "": what a submitter keeps of an offer's site.
func SiteName(name string) string {
	if name == "" || len(SiteLabelPrefix)+len(name) > MaxLabelLen {
		return ""
	}
	return name
}
