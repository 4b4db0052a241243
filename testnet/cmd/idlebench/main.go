// Command idlebench measures idle Zorilla agents: it starts N real
// `zorilla agent` processes on loopback, each bootstrapped from one agent
// started before it, times how long they take to converge (every agent has
// a full neighbour set and the neighbour graph is connected), leaves them
// idle, and reports each agent's resident memory (VmRSS) and CPU% over the
// last minute, read from /proc. It prints a Markdown table for
// BENCHMARKS.md.
//
//	go build -o /tmp/zorilla ./cmd/zorilla
//	go run ./testnet/cmd/idlebench -bin /tmp/zorilla -n 32 -idle 5m
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/overlay"
	"github.com/zorilla-p2p/zorilla/testnet"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat
// (100 on every Linux architecture Go supports).
const clockTicks = 100

type agent struct {
	dir string
	cmd *exec.Cmd
	id  node.IDInfo
}

func main() {
	bin := flag.String("bin", "", "path to the zorilla binary (required)")
	n := flag.Int("n", 32, "agents")
	idle := flag.Duration("idle", 5*time.Minute, "time from the first start to the measurement")
	window := flag.Duration("window", time.Minute, "CPU% is averaged over this last part of -idle")
	seed := flag.Uint64("seed", 1, "chooses who bootstraps from whom")
	flag.Parse()
	if *bin == "" || *n < 2 || *window <= 0 || *window >= *idle {
		fmt.Fprintln(os.Stderr, "idlebench: want -bin, -n >= 2 and 0 < -window < -idle")
		os.Exit(2)
	}
	if err := bench(*bin, *n, *idle, *window, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "idlebench:", err)
		os.Exit(1)
	}
}

func bench(bin string, n int, idle, window time.Duration, seed uint64) error {
	root, err := os.MkdirTemp("", "zib")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	rng := rand.New(rand.NewPCG(seed, 0))
	var agents []*agent
	defer stopAll(&agents)
	start := time.Now()
	for i := range n {
		var boot string
		if i > 0 {
			boot = agents[rng.IntN(i)].id.Addrs[0]
		}
		a, err := startAgent(bin, filepath.Join(root, strconv.Itoa(i)), boot)
		if err != nil {
			return fmt.Errorf("agent %d: %w", i, err)
		}
		agents = append(agents, a)
	}
	started := time.Since(start)
	converged, err := awaitConvergence(agents, start, start.Add(idle-window))
	if err != nil {
		return err
	}
	time.Sleep(time.Until(start.Add(idle - window)))
	before, err := cpuTicks(agents)
	if err != nil {
		return err
	}
	time.Sleep(time.Until(start.Add(idle)))
	after, err := cpuTicks(agents)
	if err != nil {
		return err
	}
	var rss, anon []float64 // MB
	var cpu []float64       // percent of one core
	for i, a := range agents {
		kb, err := procStatus(a.cmd.Process.Pid, "VmRSS:")
		if err != nil {
			return err
		}
		akb, err := procStatus(a.cmd.Process.Pid, "RssAnon:")
		if err != nil {
			return err
		}
		rss, anon = append(rss, float64(kb)/1024), append(anon, float64(akb)/1024)
		cpu = append(cpu, 100*float64(after[i]-before[i])/clockTicks/window.Seconds())
	}
	report(n, idle, window, started, converged, rss, anon, cpu)
	return nil
}

func startAgent(bin, dir, bootstrap string) (*agent, error) {
	args := []string{"agent", "--data-dir", dir, "--web", "off", // many agents: the default view port is one
		"--listen", "/ip4/127.0.0.1/tcp/0", "--listen", "/ip4/127.0.0.1/udp/0/quic-v1"}
	if bootstrap != "" {
		args = append(args, "--bootstrap", bootstrap)
	}
	cmd := exec.Command(bin, args...)
	log, err := os.Create(dir + ".log")
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	a := &agent{dir: dir, cmd: cmd}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if cl, err := node.Dial(dir); err == nil {
			a.id, err = cl.ID(context.Background())
			cl.Close()
			if err == nil {
				return a, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	return nil, errors.New("socket never answered")
}

// awaitConvergence polls every agent's API until all have K nearest and
// Random long-range neighbours and the neighbour graph is strongly
// connected; it returns the time since start (the first agent's start).
// Polling stops there, so it does not disturb the idle measurement.
func awaitConvergence(agents []*agent, start, limit time.Time) (time.Duration, error) {
	cfg := overlay.DefaultConfig()
	for time.Now().Before(limit) {
		ok, err := converged(agents, cfg)
		if err != nil {
			return 0, err
		}
		if ok {
			return time.Since(start), nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return 0, errors.New("agents did not converge")
}

func converged(agents []*agent, cfg overlay.Config) (bool, error) {
	g := testnet.Graph{}
	for _, a := range agents {
		cl, err := node.Dial(a.dir)
		if err != nil {
			return false, err
		}
		info, err := cl.Peers(context.Background())
		cl.Close()
		if err != nil {
			return false, err
		}
		near, far := 0, 0
		for _, p := range info.Neighbours {
			g[a.id.ID] = append(g[a.id.ID], p.ID)
			if p.Near {
				near++
			}
			if p.LongRange {
				far++
			}
		}
		if near != cfg.K || far != cfg.Random {
			return false, nil
		}
	}
	return g.StronglyConnected(), nil
}

// cpuTicks reads utime+stime of every agent.
func cpuTicks(agents []*agent) ([]int64, error) {
	var out []int64
	for _, a := range agents {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", a.cmd.Process.Pid))
		if err != nil {
			return nil, err
		}
		// Fields after the command name (which may hold spaces) start at ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			return nil, fmt.Errorf("short /proc stat for %d", a.cmd.Process.Pid)
		}
		u, err1 := strconv.ParseInt(f[11], 10, 64) // utime, field 14
		s, err2 := strconv.ParseInt(f[12], 10, 64) // stime, field 15
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		out = append(out, u+s)
	}
	return out, nil
}

// procStatus reads a kB field of /proc/<pid>/status: VmRSS is all
// resident memory, RssAnon the part private to the process (RssFile, the
// binary's pages, is shared by every agent on the machine).
func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			return strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s for %d", field, pid)
}

func stopAll(agents *[]*agent) {
	for _, a := range *agents {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, a := range *agents {
		_ = a.cmd.Wait()
	}
}

func report(n int, idle, window, started, converged time.Duration, rss, anon, cpu []float64) {
	stat := func(v []float64) (lo, med, hi float64) {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[0], s[len(s)/2], s[len(s)-1]
	}
	rl, rm, rh := stat(rss)
	al, am, ah := stat(anon)
	cl, cm, ch := stat(cpu)
	fmt.Printf("| agents | all started | converged (from first start) | VmRSS min / median / max | RssAnon min / median / max | CPU min / median / max (last %v of %v) |\n", window, idle)
	fmt.Println("| --- | --- | --- | --- | --- | --- |")
	fmt.Printf("| %d | %.1fs | %.1fs | %.1f / %.1f / %.1f MB | %.1f / %.1f / %.1f MB | %.2f / %.2f / %.2f %% |\n",
		n, started.Seconds(), converged.Seconds(), rl, rm, rh, al, am, ah, cl, cm, ch)
}
