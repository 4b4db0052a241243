package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zorilla-p2p/zorilla/node"
)

// containerState is docker's view of one container.
type containerState struct {
	Status   string   // created, running, paused, exited, ...
	Pid      int      // 0 unless running or paused
	Networks []string // docker networks it is connected to
}

// inspect returns docker's view of every container of the testnet, by
// name, in one docker call.
func (t *Testnet) inspect(ctx context.Context) (map[string]containerState, error) {
	ids, err := t.docker.lines(ctx, "ps", "-aq", "--filter", t.labelFilter())
	if err != nil || len(ids) == 0 {
		return map[string]containerState{}, err
	}
	format := `{{.Name}}|{{.State.Status}}|{{.State.Pid}}|{{range $k, $v := .NetworkSettings.Networks}}{{$k}},{{end}}`
	lines, err := t.docker.lines(ctx, append([]string{"inspect", "-f", format}, ids...)...)
	if err != nil {
		return nil, err
	}
	return parseInspect(lines), nil
}

// parseInspect reads the lines of inspect's format.
func parseInspect(lines []string) map[string]containerState {
	out := make(map[string]containerState, len(lines))
	for _, l := range lines {
		f := strings.Split(l, "|")
		if len(f) != 4 {
			continue
		}
		pid, _ := strconv.Atoi(f[2])
		s := containerState{Status: f[1], Pid: pid}
		for n := range strings.SplitSeq(f[3], ",") {
			if n != "" {
				s.Networks = append(s.Networks, n)
			}
		}
		out[strings.TrimPrefix(f[0], "/")] = s
	}
	return out
}

// ContainerStatus is one agent container as it is now.
type ContainerStatus struct {
	Container
	State      string   // docker's (running, paused, exited...) or "missing"
	Networks   []string // the docker networks it is connected to
	Neighbours int      // the agent's neighbour count, from its API
	Known      int      // peers the agent knows
	Queues     int      // NFQUEUE queues bound in its namespace (nfqueue shaper)
	APIError   string   // why the API did not answer, if it did not
}

// Status is the testnet as it is now.
type Status struct {
	Name       string
	Shaper     string
	Delayer    string // the delayer container's state; "" without one
	Networks   []string
	Containers []ContainerStatus
}

// Status asks docker for every container and network of the testnet,
// and each running agent for its neighbours.
func (t *Testnet) Status(ctx context.Context) (Status, error) {
	states, err := t.inspect(ctx)
	if err != nil {
		return Status{}, err
	}
	nets, err := t.docker.lines(ctx, "network", "ls", "--format", "{{.Name}}", "--filter", t.labelFilter())
	if err != nil {
		return Status{}, err
	}
	st := Status{Name: t.cfg.Name, Shaper: t.st.Shaper, Networks: nets, Delayer: states[t.delayerName()].Status}
	st.Containers = make([]ContainerStatus, len(t.st.Containers))
	var wg sync.WaitGroup
	for i, c := range t.st.Containers {
		s, ok := states[c.Name]
		cs := ContainerStatus{Container: c, State: s.Status, Networks: s.Networks}
		if !ok {
			cs.State = "missing"
		}
		st.Containers[i] = cs
		if s.Status != "running" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.Containers[i].fill(ctx, s.Pid, t.st.Shaper)
		}()
	}
	wg.Wait()
	return st, nil
}

// fill asks the agent for its peers and the kernel for its queues.
func (cs *ContainerStatus) fill(ctx context.Context, pid int, shaper string) {
	if shaper == ShaperNFQueue {
		cs.Queues, _ = queuesBound(pid)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	cl, err := node.Dial(cs.DataDir)
	if err != nil {
		cs.APIError = err.Error()
		return
	}
	defer cl.Close()
	p, err := cl.Peers(ctx)
	if err != nil {
		cs.APIError = err.Error()
		return
	}
	cs.Neighbours, cs.Known = len(p.Neighbours), p.Known
}

// Print writes the status as a table.
func (s Status) Print(w io.Writer) {
	fmt.Fprintf(w, "testnet %s: latency by %s", s.Name, s.Shaper)
	if s.Delayer != "" {
		fmt.Fprintf(w, ", delayer %s", s.Delayer)
	}
	fmt.Fprintf(w, ", networks %s\n", strings.Join(s.Networks, " "))
	fmt.Fprintf(w, "%-24s %-8s %-9s %-15s %-10s %5s %6s  %s\n", "CONTAINER", "SITE", "STATE", "WAN", "NETS", "NEIGH", "KNOWN", "PEER")
	for _, c := range s.Containers {
		neigh, known := strconv.Itoa(c.Neighbours), strconv.Itoa(c.Known)
		if c.State != "running" || c.APIError != "" {
			neigh, known = "-", "-"
		}
		fmt.Fprintf(w, "%-24s %-8s %-9s %-15s %-10d %5s %6s  %s\n", c.Name, c.SiteName, c.State, c.WANIP, len(c.Networks), neigh, known, c.PeerID)
	}
}

// Await polls the testnet's status until cond holds, or ctx ends.
func (t *Testnet) Await(ctx context.Context, what string, every time.Duration, cond func(Status) error) error {
	var last error
	for {
		st, err := t.Status(ctx)
		if err == nil {
			if last = cond(st); last == nil {
				return nil
			}
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: waiting for %s: %w (last: %v)", what, ctx.Err(), last)
		case <-time.After(every):
		}
	}
}

// Converged is an Await condition: every running agent has at least min
// neighbours and, with the nfqueue shaper, its delay line is bound.
func Converged(min int) func(Status) error {
	return func(s Status) error {
		for _, c := range s.Containers {
			if c.State != "running" {
				continue
			}
			if c.APIError != "" || c.Neighbours < min {
				return fmt.Errorf("%s has %d neighbours (api: %q), want %d", c.Name, c.Neighbours, c.APIError, min)
			}
			if s.Shaper == ShaperNFQueue && c.Queues == 0 {
				return fmt.Errorf("%s: %w (no delay line bound yet)", c.Name, errNotShaped)
			}
		}
		return nil
	}
}

// readFileLimited reads at most limit bytes of a file.
func readFileLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}
