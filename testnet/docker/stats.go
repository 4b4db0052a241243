package docker

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// ContainerStats is one container's use of the machine, as docker stats
// reports it at one moment.
type ContainerStats struct {
	Name   string
	CPU    float64 // percent of one core
	Memory int64   // bytes (the cgroup's usage without page cache)
}

// Stats samples every running container of the testnet once (docker
// stats --no-stream), the delayer included.
func (t *Testnet) Stats(ctx context.Context) ([]ContainerStats, error) {
	ids, err := t.docker.lines(ctx, "ps", "-q", "--filter", t.labelFilter())
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	lines, err := t.docker.lines(ctx, append([]string{"stats", "--no-stream", "--format", "{{.Name}}|{{.CPUPerc}}|{{.MemUsage}}"}, ids...)...)
	if err != nil {
		return nil, err
	}
	out := make([]ContainerStats, 0, len(lines))
	for _, l := range lines {
		s, err := parseStatsLine(l)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// parseStatsLine reads "name|0.52%|12.3MiB / 23.5GiB".
func parseStatsLine(l string) (ContainerStats, error) {
	f := strings.Split(l, "|")
	if len(f) != 3 {
		return ContainerStats{}, fmt.Errorf("docker stats: line %q", l)
	}
	cpu, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(f[1]), "%"), 64)
	if err != nil {
		return ContainerStats{}, fmt.Errorf("docker stats: cpu %q: %w", f[1], err)
	}
	used, _, _ := strings.Cut(f[2], "/")
	mem, err := parseSize(strings.TrimSpace(used))
	if err != nil {
		return ContainerStats{}, fmt.Errorf("docker stats: memory %q: %w", f[2], err)
	}
	return ContainerStats{Name: f[0], CPU: cpu, Memory: mem}, nil
}

// parseSize reads docker's human sizes: 512B, 1.5KiB, 12.3MiB, 2GiB (and
// the decimal kB, MB, GB).
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		scale  float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("size %q", s)
			}
			return int64(v * u.scale), nil
		}
	}
	return 0, fmt.Errorf("size %q: unknown unit", s)
}

// Footprint sums up samples of agent containers (the delayer left out):
// how many, and the mean and largest memory and CPU.
type Footprint struct {
	Agents             int
	MeanMemory, MaxMem int64
	MeanCPU, MaxCPU    float64
	TotalMemory        int64
	TotalCPU           float64
}

// Summarize computes the footprint of the agents among stats.
func Summarize(stats []ContainerStats, delayer string) Footprint {
	var f Footprint
	for _, s := range stats {
		if s.Name == delayer {
			continue
		}
		f.Agents++
		f.TotalMemory += s.Memory
		f.TotalCPU += s.CPU
		f.MaxMem = max(f.MaxMem, s.Memory)
		f.MaxCPU = max(f.MaxCPU, s.CPU)
	}
	if f.Agents > 0 {
		f.MeanMemory = f.TotalMemory / int64(f.Agents)
		f.MeanCPU = f.TotalCPU / float64(f.Agents)
	}
	return f
}

// PrintStats writes the samples as a table, and the agents' footprint.
func PrintStats(w io.Writer, stats []ContainerStats, delayer string) {
	fmt.Fprintf(w, "%-24s %7s %10s\n", "CONTAINER", "CPU%", "MEMORY")
	for _, s := range stats {
		fmt.Fprintf(w, "%-24s %7.2f %8.1fMiB\n", s.Name, s.CPU, float64(s.Memory)/(1<<20))
	}
	f := Summarize(stats, delayer)
	fmt.Fprintf(w, "%d agents: memory mean %.1f MiB, max %.1f MiB, total %.1f MiB; CPU mean %.2f%%, max %.2f%%, total %.2f%%\n",
		f.Agents, mib(f.MeanMemory), mib(f.MaxMem), mib(f.TotalMemory), f.MeanCPU, f.MaxCPU, f.TotalCPU)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// DelayerName is the docker name of the testnet's delayer container.
func (t *Testnet) DelayerName() string { return t.delayerName() }
