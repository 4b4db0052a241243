package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/node"
)

// Waits of the demo network, each bounded so that a broken agent makes the
// demo fail with its log rather than hang.
const (
	// agentStartWait: an agent answers on its socket within a second or
	// two; 20 s allows for a loaded machine.
	agentStartWait = 20 * time.Second
	// neighbourWait: loopback agents find each other in a few seconds.
	neighbourWait = 30 * time.Second
	// agentStopGrace: an agent shuts down (API, services, host) in well
	// under a second; after this it is killed.
	agentStopGrace = 5 * time.Second
	// pollEvery is how often the demo asks an agent whether it is ready.
	pollEvery = 50 * time.Millisecond
)

// demoAgent is one agent process of the demo network.
type demoAgent struct {
	name    string // a0, a1, ...
	dir     string // its data dir
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has ended; err is then set
	err     error
	client  *node.Client
	id      node.IDInfo
}

// demoNet is the agents of a local network (demo, bench), each a child
// process of the command, and the folder holding their data dirs and logs.
type demoNet struct {
	who    string // the command, in its messages: "demo", "bench"
	exe    string // the zorilla binary the agents run; this one when empty
	dir    string
	log    io.Writer
	agents []*demoAgent
}

// newDemoNet makes the folder of a local network for the command who,
// whose messages go to log.
func newDemoNet(who string, log io.Writer) (*demoNet, error) {
	dir, err := os.MkdirTemp("", "z"+who) // short: agents' sockets live under it
	if err != nil {
		return nil, fmt.Errorf("folder of the agents: %w", err)
	}
	return &demoNet{who: who, dir: dir, log: log}, nil
}

// up starts count agents offering procs slots each and waits until every
// one has neighbours to flood to.
func (n *demoNet) up(ctx context.Context, count, procs int) error {
	t0 := time.Now()
	if err := n.start(ctx, count, procs); err != nil {
		return err
	}
	fmt.Fprintf(n.log, "zorilla %s: %d agents up in %v (data dirs in %s)\n", n.who, count, since(t0), n.dir)
	return n.awaitNeighbours(ctx)
}

// close stops the agents, then removes their folder, or keeps it and
// says where it is.
func (n *demoNet) close(keep bool) {
	n.stop()
	if keep {
		fmt.Fprintf(n.log, "zorilla %s: kept the agents' data dirs and logs in %s\n", n.who, n.dir)
		return
	}
	for _, a := range n.agents {
		// An agent killed rather than stopped leaves its sandboxed jobs
		// folder (outside its data dir, named from it) behind.
		_ = os.RemoveAll(filepath.Dir(node.JobsDirOf(a.dir, true)))
	}
	os.RemoveAll(n.dir)
}

// start runs count agents: the first, then the others bootstrapped from it,
// and waits until each answers on its socket.
func (n *demoNet) start(ctx context.Context, count, procs int) error {
	exe := n.exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("find the zorilla binary: %w", err)
		}
	}
	first, err := n.spawn(exe, procs, "")
	if err != nil {
		return err
	}
	if err := first.await(ctx); err != nil {
		return err
	}
	if first.id.Web != "" && n.who == "demo" {
		fmt.Fprintf(n.log, "zorilla %s: web view of agent a0: %s\n", n.who, first.id.Web)
	}
	boot := loopbackAddr(first.id.Addrs)
	if boot == "" {
		return fmt.Errorf("agent a0 has no 127.0.0.1 TCP address among %v", first.id.Addrs)
	}
	for range count - 1 {
		if _, err := n.spawn(exe, procs, boot); err != nil {
			return err
		}
	}
	for _, a := range n.agents[1:] {
		if err := a.await(ctx); err != nil {
			return err
		}
	}
	return nil
}

// spawn starts one agent process with its own data dir and log file.
func (n *demoNet) spawn(exe string, procs int, bootstrap string) (*demoAgent, error) {
	name := "a" + strconv.Itoa(len(n.agents))
	a := &demoAgent{name: name, dir: filepath.Join(n.dir, name), logPath: filepath.Join(n.dir, name+".log"),
		exited: make(chan struct{})}
	p := strconv.Itoa(procs)
	args := []string{"agent", "--data-dir", a.dir, "--listen", "/ip4/127.0.0.1/tcp/0",
		"--max-procs", p, "--cores", p, "--open", "--network", n.network(), "--mdns=false",
		"--web", "127.0.0.1:0"} // each its own free port

	if bootstrap != "" {
		args = append(args, "--bootstrap", bootstrap)
	}
	logf, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("agent %s log: %w", name, err)
	}
	defer logf.Close() // the child has its own copy
	a.cmd = exec.Command(exe, args...)
	a.cmd.Stdout, a.cmd.Stderr = logf, logf
	a.cmd.Env = agentEnv(os.Environ())
	a.cmd.SysProcAttr = demoProcAttr()
	if err := a.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start agent %s: %w", name, err)
	}
	n.agents = append(n.agents, a)
	go func() {
		a.err = a.cmd.Wait()
		close(a.exited)
	}()
	return a, nil
}

// agentEnv is the demo's environment without ZORILLA_ settings, which are
// the user's own agent's (data dir, bootstrap peers) and not the demo's.
func agentEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "ZORILLA_") {
			out = append(out, kv)
		}
	}
	return out
}

// await waits until the agent answers `zorilla id` on its socket.
func (a *demoAgent) await(ctx context.Context) error {
	deadline := time.NewTimer(agentStartWait)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case <-a.exited:
			return fmt.Errorf("agent %s exited (%v); its log %s:\n%s", a.name, a.err, a.logPath, logTail(a.logPath))
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("agent %s did not answer on its socket within %v; its log %s:\n%s",
				a.name, agentStartWait, a.logPath, logTail(a.logPath))
		case <-tick.C:
			if a.ready(ctx) {
				return nil
			}
		}
	}
}

// ready asks the agent for its ID once.
func (a *demoAgent) ready(ctx context.Context) bool {
	if a.client == nil {
		cl, err := node.Dial(a.dir)
		if err != nil {
			return false
		}
		a.client = cl
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	id, err := a.client.ID(ctx)
	if err != nil {
		return false
	}
	a.id = id
	return true
}

// awaitNeighbours waits until every agent has neighbours to flood to and
// a flood from any agent reaches every other one along them. Agents that
// know each other are not yet linked: right after the start a third of a
// demo's agents were outside every radius of agent 0's flood, and a spread
// job was placed on the others.
func (n *demoNet) awaitNeighbours(ctx context.Context) error {
	want := min(len(n.agents)-1, 2)
	ctx, cancel := context.WithTimeout(ctx, neighbourWait)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		links, short := n.links(ctx, want)
		if short == nil && floodReachesAll(links) {
			return nil
		}
		select {
		case <-ctx.Done():
			if short != nil {
				return fmt.Errorf("agent %s has fewer than %d neighbours after %v: %w", short.name, want, neighbourWait, ctx.Err())
			}
			return fmt.Errorf("the agents' neighbours do not link them all after %v: %w", neighbourWait, ctx.Err())
		case <-tick.C:
		}
		for _, a := range n.agents {
			select {
			case <-a.exited:
				return fmt.Errorf("agent %s exited (%v); its log %s:\n%s", a.name, a.err, a.logPath, logTail(a.logPath))
			default:
			}
		}
	}
}

// links asks every agent for its neighbours: the flood's links, by agent
// index, and the first agent with fewer than want, if any.
func (n *demoNet) links(ctx context.Context, want int) ([][]int, *demoAgent) {
	index := map[peer.ID]int{}
	for i, a := range n.agents {
		index[a.id.ID] = i
	}
	links := make([][]int, len(n.agents))
	var short *demoAgent
	for i, a := range n.agents {
		info, err := a.client.Peers(ctx)
		if err != nil || len(info.Neighbours) < want {
			if short == nil {
				short = a
			}
			continue
		}
		for _, nb := range info.Neighbours {
			if j, ok := index[nb.ID]; ok {
				links[i] = append(links[i], j)
			}
		}
	}
	return links, short
}

// floodReachesAll reports whether, following links, every node reaches
// every other.
func floodReachesAll(links [][]int) bool {
	for from := range links {
		seen := make([]bool, len(links))
		seen[from] = true
		queue, reached := []int{from}, 1
		for len(queue) > 0 {
			i := queue[0]
			queue = queue[1:]
			for _, j := range links[i] {
				if !seen[j] {
					seen[j], reached = true, reached+1
					queue = append(queue, j)
				}
			}
		}
		if reached != len(links) {
			return false
		}
	}
	return true
}

// stop ends every agent: SIGTERM, then SIGKILL for those still running
// after agentStopGrace. It returns once every process has ended.
func (n *demoNet) stop() {
	for _, a := range n.agents {
		if a.client != nil {
			a.client.Close()
		}
		if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			_ = a.cmd.Process.Kill()
		}
	}
	grace := time.NewTimer(agentStopGrace)
	defer grace.Stop()
	for _, a := range n.agents {
		select {
		case <-a.exited:
			continue
		case <-grace.C:
		}
		fmt.Fprintf(n.log, "zorilla %s: agent %s did not stop within %v; killing it\n", n.who, a.name, agentStopGrace)
		_ = a.cmd.Process.Kill()
		<-a.exited
		grace.Reset(0) // the grace is over for the others too
	}
}

// network is the Zorilla network of the local agents, named after their
// folder: they never join the owner's own agents, nor another local
// network.
func (n *demoNet) network() string { return "local-" + strings.ToLower(filepath.Base(n.dir)) }

// names maps each agent's peer ID to its name in the demo.
func (n *demoNet) names() map[string]string {
	m := make(map[string]string, len(n.agents))
	for _, a := range n.agents {
		m[a.id.ID.String()] = a.name
	}
	return m
}

// loopbackAddr picks the 127.0.0.1 TCP address among an agent's full
// multiaddrs (with /p2p/).
func loopbackAddr(addrs []string) string {
	for _, a := range addrs {
		if strings.HasPrefix(a, "/ip4/127.0.0.1/tcp/") {
			return a
		}
	}
	return ""
}

// logTail is the end of an agent's log, for an error message.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return strings.TrimRight(string(b), "\n")
}
