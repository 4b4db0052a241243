package docker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDockerFootprint measures idle agent containers for BENCHMARKS.md:
// for each count in ZORILLA_DOCKER_FOOTPRINT (e.g. "12,50,100") it brings
// up that many agents on 3 sites (2 cores each, 10 ms and 20 ms away),
// waits until they have neighbours, lets them idle for
// ZORILLA_DOCKER_IDLE (default 2m), samples docker stats three times 10 s
// apart, and tears down. The machine's available memory is read before
// and after, so the docker shims' share shows too.
//
//	ZORILLA_DOCKER_FOOTPRINT=12,50,100 go test -run DockerFootprint -v -timeout 60m ./testnet/docker
func TestDockerFootprint(t *testing.T) {
	counts := os.Getenv("ZORILLA_DOCKER_FOOTPRINT")
	if counts == "" {
		t.Skip("skipped: set ZORILLA_DOCKER_FOOTPRINT=12,50,100 to measure idle agent containers")
	}
	needDocker(t)
	idle := 2 * time.Minute
	if v := os.Getenv("ZORILLA_DOCKER_IDLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		idle = d
	}
	ctx := context.Background()
	tag, _ := testImageBuild(t, ctx)
	var rows []string
	for f := range strings.SplitSeq(counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 3 {
			t.Fatalf("count %q", f)
		}
		rows = append(rows, footprint(t, ctx, tag, n, idle))
	}
	t.Logf("\n| agents | start (s) | converged (s) | container memory mean / max (MiB) | agent VmRSS / RssAnon mean (MiB) | shim RSS mean (MiB) | agent CPU mean / max (%%) | all agents CPU (%% of one core) | MemAvailable drop (MiB) | delayer CPU (%%) / memory (MiB) |\n|---|---|---|---|---|---|---|---|---|---|\n%s",
		strings.Join(rows, "\n"))
}

func footprint(t *testing.T, ctx context.Context, tag string, n int, idle time.Duration) string {
	dir, err := os.MkdirTemp("", "zf")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := DefaultConfig()
	cfg.Name, cfg.Dir, cfg.Image = fmt.Sprintf("zf%d", os.Getpid()%100000), filepath.Join(dir, "t"), tag
	cfg.ReadyTimeout = 3 * time.Minute
	cfg.Shaper = shaperForTest()
	before := memAvailable(t)
	start := time.Now()
	tn, err := Up(ctx, cfg, EvenSites(n, 3, 2, 10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := Down(ctx, cfg, false); err != nil {
			t.Error(err)
		}
	}()
	started := time.Since(start)
	actx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := tn.Await(actx, "neighbours", 2*time.Second, Converged(min(5, n-1))); err != nil {
		t.Fatal(err)
	}
	converged := time.Since(start)
	time.Sleep(idle) // the measurement is of agents left idle this long
	sum := map[string]ContainerStats{}
	for i := range 3 {
		stats, err := tn.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range stats {
			a := sum[s.Name]
			a.Name, a.CPU, a.Memory = s.Name, a.CPU+s.CPU/3, a.Memory+s.Memory/3
			sum[s.Name] = a
		}
		if i < 2 {
			time.Sleep(10 * time.Second)
		}
	}
	used := before - memAvailable(t)
	agentRSS, agentAnon, shimRSS := processMemory(t, ctx, tn)
	var all []ContainerStats
	for _, s := range sum {
		all = append(all, s)
	}
	f := Summarize(all, tn.DelayerName())
	d := sum[tn.DelayerName()]
	row := fmt.Sprintf("| %d | %.1f | %.1f | %.1f / %.1f | %.1f / %.1f | %.1f | %.2f / %.2f | %.1f | %d | %.2f / %.1f |",
		f.Agents, started.Seconds(), converged.Seconds(), mib(f.MeanMemory), mib(f.MaxMem), mib(agentRSS), mib(agentAnon), mib(shimRSS),
		f.MeanCPU, f.MaxCPU, f.TotalCPU, used>>20, d.CPU, mib(d.Memory))
	t.Log(row)
	return row
}

// processMemory reads, from the host's /proc, the mean VmRSS and RssAnon
// of the agents (each container's first process) and the mean RSS of the
// containerd shim that docker keeps beside each container.
func processMemory(t *testing.T, ctx context.Context, tn *Testnet) (rss, anon, shim int64) {
	states, err := tn.inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tn.docker.lines(ctx, "ps", "-q", "--no-trunc", "--filter", tn.labelFilter())
	if err != nil {
		t.Fatal(err)
	}
	n := int64(0)
	for _, c := range tn.Containers() {
		if s := states[c.Name]; s.Pid > 0 {
			rss += statusField(t, s.Pid, "VmRSS:")
			anon += statusField(t, s.Pid, "RssAnon:")
			n++
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	shims := int64(0)
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "containerd-shim") {
			continue
		}
		for _, id := range ids {
			if strings.Contains(string(b), id) {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
				shim += statusField(t, pid, "VmRSS:")
				shims++
			}
		}
	}
	if n == 0 || shims == 0 {
		t.Fatalf("%d agents and %d shims found", n, shims)
	}
	return rss / n, anon / n, shim / shims
}

// statusField reads a "kB" field of /proc/<pid>/status, in bytes.
func statusField(t *testing.T, pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// memAvailable reads MemAvailable from /proc/meminfo, in bytes.
func memAvailable(t *testing.T) int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no MemAvailable in /proc/meminfo")
	return 0
}
