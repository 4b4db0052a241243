package job

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// ParseRequire reads the --require flag: comma-separated key=value pairs
// with keys os, arch, cores, mem (or memory) and label (repeatable), e.g.
// "os=linux,arch=amd64,mem=2G,cores=4,label=gpu". A label may itself hold
// '=' ("label=site=nancy"). The result is validated.
func ParseRequire(s string) (proto.Requirements, error) {
	var r proto.Requirements
	if strings.TrimSpace(s) == "" {
		return r, nil
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || v == "" {
			return proto.Requirements{}, fmt.Errorf("require: %q is not key=value", part)
		}
		if k == "memory" {
			k = "mem"
		}
		if seen[k] && k != "label" {
			return proto.Requirements{}, fmt.Errorf("require: %s given twice", k)
		}
		seen[k] = true
		if err := setRequire(&r, k, v); err != nil {
			return proto.Requirements{}, err
		}
	}
	if err := r.Validate(); err != nil {
		return proto.Requirements{}, err
	}
	return r, nil
}

func setRequire(r *proto.Requirements, k, v string) error {
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
		n, err := proto.ParseSize(v)
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
