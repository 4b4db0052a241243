package docker

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/wire"
)

// NetemAvailable tells whether the kernel has the netem qdisc: it adds one
// to the loopback of a scratch network namespace (which vanishes with the
// command) and reports whether tc succeeded.
func NetemAvailable(ctx context.Context) (bool, error) {
	if _, err := exec.LookPath("tc"); err != nil {
		return false, fmt.Errorf("%w: tc is missing on this host (apt-get install iproute2)", ErrNoDocker)
	}
	_, err := runTool(ctx, "unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms")
	if err == nil {
		return true, nil
	}
	if strings.Contains(err.Error(), "qdisc kind is unknown") {
		return false, nil
	}
	return false, fmt.Errorf("docker: probe netem: %w", err)
}

// chooseShaper resolves the configured shaper (pickShaper); a layout with
// no latency to add needs none. The host tools the choice needs must be
// there.
func chooseShaper(ctx context.Context, want string, l Layout, local time.Duration, quic bool) (string, error) {
	if want == ShaperNone || (len(l.Sites) == 1 && local == 0) {
		return ShaperNone, nil
	}
	netem := false
	if want == ShaperAuto || want == ShaperNetem {
		ok, err := NetemAvailable(ctx)
		if err != nil && want == ShaperNetem {
			return "", err
		}
		if err != nil {
			log.Infow("cannot probe netem; latency by another shaper", "err", err)
		}
		netem = ok
	}
	switch shaper := pickShaper(want, netem, quic); shaper {
	case "":
		return "", fmt.Errorf("%w: the kernel has no netem qdisc; use the transport or nfqueue shaper", ErrNoDocker)
	case ShaperNFQueue:
		if _, err := exec.LookPath("iptables"); err != nil {
			return "", fmt.Errorf("%w: iptables is missing on this host (apt-get install iptables)", ErrNoDocker)
		}
		return shaper, nil
	default:
		return shaper, nil
	}
}

// pickShaper is the shaper for want, given whether the kernel has netem
// and the agents run QUIC; "" when want cannot be had. Auto is netem
// where the kernel has it (the kernel delays every packet and the agents
// run as anywhere), else the agents' own transport delay (nothing runs
// beside them, no host tools), else, when the agents run QUIC, which that
// delay leaves alone, the NFQUEUE delay line.
func pickShaper(want string, netem, quic bool) string {
	switch {
	case want == ShaperAuto && netem:
		return ShaperNetem
	case want == ShaperAuto && !quic:
		return ShaperTransport
	case want == ShaperAuto:
		return ShaperNFQueue
	case want == ShaperNetem && !netem:
		return ""
	}
	return want
}

// transportDelay is the --testnet-delay of a container with the
// transport shaper: each destination subnet of its rules with the
// rule's one-way delay, half the RTT, so that two agents' delays add up
// to the RTT between their sites.
func transportDelay(rules []Rule) string {
	var items []string
	for _, r := range rules {
		for _, p := range r.Dst {
			items = append(items, p.String()+"="+r.Delay.String())
		}
	}
	return strings.Join(items, ",")
}

// agentArgs is c's agent command line, with its delays when the agents
// put the latency on their own sends.
func (t *Testnet) agentArgs(c Container) []string {
	args := c.AgentArgs(t.st.QUIC, append([]string{"--network", t.cfg.Network()}, t.cfg.AgentArgs...))
	if t.st.Shaper != ShaperTransport {
		return args
	}
	rules := delayRules(t.st.Layout, t.st.Addrs, c.Site, t.st.LocalRTT)
	if len(rules) == 0 {
		return args
	}
	return append(args, "--testnet-delay", transportDelay(rules))
}

// shape puts the latency of c's site on the traffic c sends, from the
// host, inside the container's network namespace. It is idempotent: it
// replaces what an earlier call set. The transport shaper has nothing to
// do here: the agent's command line carries its delays (agentArgs).
func (t *Testnet) shape(ctx context.Context, c Container, pid int) error {
	rules := delayRules(t.st.Layout, t.st.Addrs, c.Site, t.st.LocalRTT)
	var cmds [][]string
	switch t.st.Shaper {
	case ShaperNFQueue:
		cmds = append([][]string{{"iptables", "-w", "5", "-F", "OUTPUT"}, loopbackExempt}, iptablesCommands(rules)...)
	case ShaperNetem:
		devs, err := interfaces(ctx, pid)
		if err != nil {
			return err
		}
		for _, dev := range devs {
			_, _ = nsenterRun(ctx, pid, "tc", "qdisc", "del", "dev", dev, "root") // none yet is fine
			cmds = append(cmds, netemCommands(dev, rules)...)
		}
	default:
		return nil
	}
	for _, cmd := range cmds {
		if _, err := nsenterRun(ctx, pid, cmd...); err != nil {
			return fmt.Errorf("docker: shape %s: %w", c.Name, err)
		}
	}
	return nil
}

// interfaces lists the non-loopback interfaces with an IPv4 address in
// the namespace of pid.
func interfaces(ctx context.Context, pid int) ([]string, error) {
	out, err := nsenterRun(ctx, pid, "ip", "-o", "-4", "addr", "show")
	if err != nil {
		return nil, err
	}
	return parseIPAddr(out), nil
}

// parseIPAddr reads the device names of `ip -o -4 addr show`, lo left out.
func parseIPAddr(out string) []string {
	var devs []string
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[2] != "inet" || f[1] == "lo" {
			continue
		}
		if _, err := netip.ParsePrefix(f[3]); err == nil {
			devs = append(devs, strings.TrimSuffix(f[1], ":"))
		}
	}
	return devs
}

// DelayTarget is one container whose namespace the delayer serves.
type DelayTarget struct {
	Name   string       `json:"name"`
	Pid    int          `json:"pid"` // host PID of its first process
	Queues []QueueDelay `json:"queues"`
}

// Delays is the delayer's work, in Dir/delays.json.
type Delays struct {
	Targets []DelayTarget `json:"targets"`
}

// decodeTargets reads a delays file strictly: unknown fields, a target
// without a name or PID, or a queue without a delay are refused.
func decodeTargets(b []byte) ([]DelayTarget, error) {
	var ds Delays
	if err := wire.DecodeJSON(b, &ds); err != nil {
		return nil, fmt.Errorf("decode delays: %w", err)
	}
	for _, t := range ds.Targets {
		if t.Pid <= 0 || t.Name == "" {
			return nil, fmt.Errorf("delays: target %q with pid %d", t.Name, t.Pid)
		}
		for _, q := range t.Queues {
			if q.Delay <= 0 || q.Delay > maxRTT {
				return nil, fmt.Errorf("delays: target %s queue %d: delay %v", t.Name, q.Num, q.Delay)
			}
		}
	}
	return ds.Targets, nil
}

// writeDelays rewrites the delayer's targets for the running containers
// of pids (name to host PID).
func (t *Testnet) writeDelays(pids map[string]int) error {
	if t.st.Shaper != ShaperNFQueue {
		return nil
	}
	var d Delays
	for _, c := range t.st.Containers {
		if pid, ok := pids[c.Name]; ok {
			rules := delayRules(t.st.Layout, t.st.Addrs, c.Site, t.st.LocalRTT)
			d.Targets = append(d.Targets, DelayTarget{Name: c.Name, Pid: pid, Queues: queueDelays(rules)})
		}
	}
	sort.Slice(d.Targets, func(i, j int) bool { return d.Targets[i].Name < d.Targets[j].Name })
	return writeJSONFile(filepath.Join(t.cfg.Dir, delaysFile), d)
}

// refreshDelays rewrites the delayer's targets from docker's view of
// which containers run, with which PIDs.
func (t *Testnet) refreshDelays(ctx context.Context) error {
	if t.st.Shaper != ShaperNFQueue {
		return nil
	}
	states, err := t.inspect(ctx)
	if err != nil {
		return err
	}
	pids := map[string]int{}
	for name, s := range states {
		if s.Pid > 0 {
			pids[name] = s.Pid
		}
	}
	return t.writeDelays(pids)
}

// startDelayer runs the delay lines in a helper container of the same
// image, with the capabilities to enter the agents' network namespaces
// and bind queues there (not --privileged: that asks for every capability,
// which a docker engine that itself runs confined cannot grant), in the
// host's PID namespace (it finds them as /proc/<pid>/ns/net), with Dir
// mounted read-only to read its targets. Docker restarts it if it dies; down
// removes it with the rest.
func (t *Testnet) startDelayer(ctx context.Context) error {
	if err := t.writeDelays(nil); err != nil {
		return err
	}
	_, err := t.docker.run(ctx, "run", "-d", "--name", t.delayerName(),
		"--label", LabelTestnet+"="+t.cfg.Name, "--label", LabelRole+"=delayer",
		"--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN", "--cap-add", "SYS_PTRACE", "--pid", "host", "--network", "none", "--restart", "unless-stopped",
		"--log-opt", "max-size=1m", "--log-opt", "max-file=1",
		"-v", t.cfg.Dir+":/state:ro", t.st.Image, "testnet", "delayer", "--targets", "/state/"+delaysFile)
	if err != nil {
		return fmt.Errorf("docker: start the delayer: %w", err)
	}
	return nil
}

// queuesBound counts the NFQUEUE queues a process bound in the network
// namespace of pid, from the kernel's table.
func queuesBound(pid int) (int, error) {
	b, err := readFileLimited(fmt.Sprintf("/proc/%d/net/netfilter/nfnetlink_queue", pid), 1<<20)
	if err != nil {
		return 0, err
	}
	n := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.TrimSpace(line) != "" {
			n++
		}
	}
	return n, nil
}

// errNotShaped is returned by checks when a container's latency is not in
// place.
var errNotShaped = errors.New("docker: latency not in place")
