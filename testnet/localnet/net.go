package localnet

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

	"github.com/zorilla-p2p/zorilla/node"
)

// Waits of the network, each bounded so that a broken agent makes the
// command fail with its log rather than hang.
const (
	// StartWait: an agent answers on its socket within a second or two;
	// 20 s allows for a loaded machine. Helpers of the bench get as long.
	StartWait = 20 * time.Second
	// neighbourWait: loopback agents find each other in a few seconds.
	neighbourWait = 30 * time.Second
	// StopGrace: an agent shuts down (API, services, host) in well under a
	// second; after this it is killed.
	StopGrace = 5 * time.Second
	// pollEvery is how often an agent is asked whether it is ready.
	pollEvery = 50 * time.Millisecond
)

// Agent is one agent process of the network.
type Agent struct {
	Name    string // a0, a1, ...
	Dir     string // its data dir
	LogPath string // its stdout and stderr
	// Client talks to its socket, and ID is what it said of itself; both
	// are set once Await has returned nil.
	Client *node.Client
	ID     node.IDInfo

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has ended; err is then set
	err    error
}

// Process is the agent's process, for tests that kill or signal it.
func (a *Agent) Process() *os.Process { return a.cmd.Process }

// Exited is closed once the agent's process has ended.
func (a *Agent) Exited() <-chan struct{} { return a.exited }

// Err is how the process ended, once Exited is closed.
func (a *Agent) Err() error {
	select {
	case <-a.exited:
		return a.err
	default:
		return nil
	}
}

// Net is the agents of a local network, each a child process of the
// command, and the folder holding their data dirs and logs.
type Net struct {
	who    string // the command, in its messages: "demo", "bench"
	exe    string // the zorilla binary the agents run
	dir    string
	log    io.Writer
	agents []*Agent
}

// New makes the folder of a local network for the command who, whose
// messages go to log. The agents run binary, or this process's own
// executable when it is empty.
func New(who string, log io.Writer, binary string) (*Net, error) {
	if binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the zorilla binary: %w", err)
		}
		binary = exe
	}
	dir, err := os.MkdirTemp("", "z"+who) // short: agents' sockets live under it
	if err != nil {
		return nil, fmt.Errorf("folder of the agents: %w", err)
	}
	return &Net{who: who, exe: binary, dir: dir, log: log}, nil
}

// Dir is the folder of the agents' data dirs and logs.
func (n *Net) Dir() string { return n.dir }

// Agents are the agents started so far, in order.
func (n *Net) Agents() []*Agent { return n.agents }

// Up starts count agents offering procs slots each and waits until every
// one has neighbours to flood to.
func (n *Net) Up(ctx context.Context, count, procs int) error {
	t0 := time.Now()
	if err := n.start(ctx, count, procs); err != nil {
		return err
	}
	fmt.Fprintf(n.log, "zorilla %s: %d agents up in %v (data dirs in %s)\n", n.who, count, since(t0), n.dir)
	return n.awaitNeighbours(ctx)
}

// Close stops the agents, then removes their folder, or keeps it and
// says where it is.
func (n *Net) Close(keep bool) {
	n.stop()
	if keep {
		fmt.Fprintf(n.log, "zorilla %s: kept the agents' data dirs and logs in %s\n", n.who, n.dir)
		return
	}
	for _, a := range n.agents {
		// An agent killed rather than stopped leaves its sandboxed jobs
		// folder (outside its data dir, named from it) behind.
		_ = os.RemoveAll(filepath.Dir(node.JobsDirOf(a.Dir, true)))
	}
	os.RemoveAll(n.dir)
}

// start runs count agents: the first, then the others bootstrapped from it,
// and waits until each answers on its socket.
func (n *Net) start(ctx context.Context, count, procs int) error {
	first, err := n.Spawn(procs, "")
	if err != nil {
		return err
	}
	if err := first.Await(ctx); err != nil {
		return err
	}
	if first.ID.Web != "" && n.who == "demo" {
		fmt.Fprintf(n.log, "zorilla %s: web view of agent a0: %s\n", n.who, first.ID.Web)
	}
	boot := LoopbackAddr(first.ID.Addrs)
	if boot == "" {
		return fmt.Errorf("agent a0 has no 127.0.0.1 TCP address among %v", first.ID.Addrs)
	}
	for range count - 1 {
		if _, err := n.Spawn(procs, boot); err != nil {
			return err
		}
	}
	for _, a := range n.agents[1:] {
		if err := a.Await(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Spawn starts one more agent process offering procs slots, with its own
// data dir and log file, bootstrapped from bootstrap unless it is empty.
// The caller waits for it with Await.
func (n *Net) Spawn(procs int, bootstrap string) (*Agent, error) {
	name := "a" + strconv.Itoa(len(n.agents))
	a := &Agent{Name: name, Dir: filepath.Join(n.dir, name), LogPath: filepath.Join(n.dir, name+".log"),
		exited: make(chan struct{})}
	p := strconv.Itoa(procs)
	args := []string{"agent", "--data-dir", a.Dir, "--listen", "/ip4/127.0.0.1/tcp/0",
		"--max-procs", p, "--cores", p, "--open", "--network", n.Network(), "--mdns=false",
		"--web", "127.0.0.1:0"} // each its own free port
	if bootstrap != "" {
		args = append(args, "--bootstrap", bootstrap)
	}
	logf, err := os.OpenFile(a.LogPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("agent %s log: %w", name, err)
	}
	defer logf.Close() // the child has its own copy
	a.cmd = exec.Command(n.exe, args...)
	a.cmd.Stdout, a.cmd.Stderr = logf, logf
	a.cmd.Env = AgentEnv(os.Environ())
	a.cmd.SysProcAttr = ProcAttr()
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

// AgentEnv is the command's environment without ZORILLA_ settings, which
// are the user's own agent's (data dir, bootstrap peers) and not the local
// network's.
func AgentEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "ZORILLA_") {
			out = append(out, kv)
		}
	}
	return out
}

// Await waits until the agent answers `zorilla id` on its socket.
func (a *Agent) Await(ctx context.Context) error {
	deadline := time.NewTimer(StartWait)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case <-a.exited:
			return fmt.Errorf("agent %s exited (%v); its log %s:\n%s", a.Name, a.err, a.LogPath, LogTail(a.LogPath))
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("agent %s did not answer on its socket within %v; its log %s:\n%s",
				a.Name, StartWait, a.LogPath, LogTail(a.LogPath))
		case <-tick.C:
			if a.ready(ctx) {
				return nil
			}
		}
	}
}

// ready asks the agent for its ID once.
func (a *Agent) ready(ctx context.Context) bool {
	if a.Client == nil {
		cl, err := node.Dial(a.Dir)
		if err != nil {
			return false
		}
		a.Client = cl
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	id, err := a.Client.ID(ctx)
	if err != nil {
		return false
	}
	a.ID = id
	return true
}

// stop ends every agent: SIGTERM, then SIGKILL for those still running
// after StopGrace. It returns once every process has ended.
func (n *Net) stop() {
	for _, a := range n.agents {
		if a.Client != nil {
			a.Client.Close()
		}
		if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			_ = a.cmd.Process.Kill()
		}
	}
	grace := time.NewTimer(StopGrace)
	defer grace.Stop()
	for _, a := range n.agents {
		select {
		case <-a.exited:
			continue
		case <-grace.C:
		}
		fmt.Fprintf(n.log, "zorilla %s: agent %s did not stop within %v; killing it\n", n.who, a.Name, StopGrace)
		_ = a.cmd.Process.Kill()
		<-a.exited
		grace.Reset(0) // the grace is over for the others too
	}
}

// Network is the Zorilla network of the local agents, named after their
// folder: they never join the owner's own agents, nor another local
// network.
func (n *Net) Network() string { return "local-" + strings.ToLower(filepath.Base(n.dir)) }

// Names maps each agent's peer ID to its name in the network (a0, a1...).
func (n *Net) Names() map[string]string {
	m := make(map[string]string, len(n.agents))
	for _, a := range n.agents {
		m[a.ID.ID.String()] = a.Name
	}
	return m
}

// LoopbackAddr picks the 127.0.0.1 TCP address among an agent's full
// multiaddrs (with /p2p/).
func LoopbackAddr(addrs []string) string {
	for _, a := range addrs {
		if strings.HasPrefix(a, "/ip4/127.0.0.1/tcp/") {
			return a
		}
	}
	return ""
}

// LogTail is the end of a log file, for an error message.
func LogTail(path string) string {
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

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }
