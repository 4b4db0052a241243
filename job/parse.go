package job

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

// ParseRequire reads the --require flag: comma-separated key=value pairs
// with keys os, arch, cores, mem (or memory) and label (repeatable), e.g.
// "os=linux,arch=amd64,mem=2G,cores=4,label=gpu". A label may itself hold
// '=' ("label=site=nancy"). The result is validated.
func ParseRequire(s string) (Requirements, error) {
	var r Requirements
	if strings.TrimSpace(s) == "" {
		return r, nil
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || v == "" {
			return Requirements{}, fmt.Errorf("require: %q is not key=value", part)
		}
		if k == "memory" {
			k = "mem"
		}
		if seen[k] && k != "label" {
			return Requirements{}, fmt.Errorf("require: %s given twice", k)
		}
		seen[k] = true
		if err := setRequire(&r, k, v); err != nil {
			return Requirements{}, err
		}
	}
	if err := r.Validate(); err != nil {
		return Requirements{}, err
	}
	return r, nil
}

func setRequire(r *Requirements, k, v string) error {
	switch k {
	case "os":
		r.OS = v
	case "arch":
		r.Arch = v
	case "label":
		r.Labels = append(r.Labels, v)
	case "cores":
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("require: cores: %q is not a whole number", v)
		}
		r.MinCores = n
	case "mem":
		n, err := ParseSize(v)
		if err != nil {
			return fmt.Errorf("require: mem: %w", err)
		}
		r.MinMemory = n
	default:
		return fmt.Errorf("require: unknown key %q (want os, arch, cores, mem or label)", k)
	}
	return nil
}

// ParseEnv reads one --env flag, "NAME=value", and checks the name.
func ParseEnv(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("env: %q is not NAME=value", s)
	}
	if err := checkEnv(name, value); err != nil {
		return "", "", err
	}
	return name, value, nil
}

// EnvReserved prefixes the variables Zorilla itself gives to each process
// (rank, size, replica, job key, agent socket); a job may not set them.
const EnvReserved = "ZORILLA_"

// Bounds on one environment variable.
const (
	maxEnvName  = 128
	maxEnvValue = 32 << 10
)

func checkEnv(name, value string) error {
	if name == "" || len(name) > maxEnvName {
		return fmt.Errorf("env: name must be 1..%d characters, got %d", maxEnvName, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Errorf("env: name %q: only letters, digits and '_', not starting with a digit", name)
		}
	}
	if strings.HasPrefix(strings.ToUpper(name), EnvReserved) {
		return fmt.Errorf("env: name %q: the %s prefix is reserved for Zorilla", name, EnvReserved)
	}
	if len(value) > maxEnvValue || strings.IndexByte(value, 0) >= 0 {
		return fmt.Errorf("env: %s: value must be under %d bytes with no NUL", name, maxEnvValue)
	}
	return nil
}
