package docker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/node"
)

// Up starts a testnet of the layout: one bridge network per site, a
// shared wan network, one agent container per host of each site (each
// joined through one earlier container), and the latency between sites.
// It returns once every agent's control API answers. On error, what was
// made is removed. The image must exist (BuildImage).
func Up(ctx context.Context, cfg Config, l Layout) (*Testnet, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if l.Index("wan") >= 0 {
		return nil, fmt.Errorf("%w: the site name \"wan\" is the shared network's", ErrSites)
	}
	t := &Testnet{cfg: cfg, docker: dockerCLI{cfg.Docker}}
	if err := t.preflight(ctx); err != nil {
		return nil, err
	}
	if err := ensureNeighbourRoom(l.Size(), t.cfg.logf); err != nil {
		return nil, err
	}
	if err := t.plan(ctx, l); err != nil {
		return nil, err
	}
	if err := t.start(ctx); err != nil {
		_, derr := Down(context.WithoutCancel(ctx), cfg, false)
		return nil, errors.Join(err, derr)
	}
	return t, nil
}

func (t *Testnet) preflight(ctx context.Context) error {
	if err := checkTools(ctx, t.docker, "nsenter", "unshare"); err != nil {
		return err
	}
	if names, err := t.docker.lines(ctx, "ps", "-aq", "--filter", t.labelFilter()); err != nil {
		return err
	} else if len(names) > 0 {
		return fmt.Errorf("%w: %s has %d containers; run down first", ErrExists, t.cfg.Name, len(names))
	}
	if nets, err := t.docker.lines(ctx, "network", "ls", "-q", "--filter", t.labelFilter()); err != nil {
		return err
	} else if len(nets) > 0 {
		return fmt.Errorf("%w: %s has %d networks; run down first", ErrExists, t.cfg.Name, len(nets))
	}
	if !imageExists(ctx, t.docker, t.cfg.Image) {
		return fmt.Errorf("docker: no image %s: build it first (zorilla testnet up builds it)", t.cfg.Image)
	}
	return nil
}

// plan fixes addresses, identities and the shaper, and writes the state.
func (t *Testnet) plan(ctx context.Context, l Layout) error {
	addrs, err := freeAddrPlan(ctx, t.docker)
	if err != nil {
		return err
	}
	shaper, err := chooseShaper(ctx, t.cfg.Shaper, l, t.cfg.LocalRTT, t.cfg.QUIC)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(t.cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("docker: testnet dir: %w", err)
	}
	ids, err := makeIdentities(t.cfg.Dir, l)
	if err != nil {
		return err
	}
	rng := mrand.New(mrand.NewPCG(t.cfg.Seed, 0x7a6f72696c6c61))
	t.st = State{Name: t.cfg.Name, Image: t.cfg.Image, Layout: l, Addrs: addrs, LocalRTT: t.cfg.LocalRTT, QUIC: t.cfg.QUIC,
		Shaper: shaper, Containers: planContainers(t.cfg.Name, t.cfg.Dir, l, addrs, ids, rng)}
	t.cfg.logf("testnet %s: %d agents on %d sites, sites %s, wan %s, latency by %s",
		t.cfg.Name, l.Size(), len(l.Sites), addrs.Sites, addrs.WAN, shaper)
	return t.saveState()
}

// makeIdentities writes a fresh agent key into each data dir, so that
// every agent's address is known before any starts and all can start at
// once, each with the address of an earlier one.
func makeIdentities(dir string, l Layout) ([]peer.ID, error) {
	var ids []peer.ID
	for _, site := range l.Sites {
		for j := range site.Hosts {
			key, _, err := crypto.GenerateEd25519Key(rand.Reader)
			if err != nil {
				return nil, fmt.Errorf("docker: identity: %w", err)
			}
			id, err := peer.IDFromPrivateKey(key)
			if err != nil {
				return nil, fmt.Errorf("docker: identity: %w", err)
			}
			b, err := crypto.MarshalPrivateKey(key)
			if err != nil {
				return nil, fmt.Errorf("docker: identity: %w", err)
			}
			dd := filepath.Join(dir, fmt.Sprintf("%s-%d", site.Name, j))
			if err := os.MkdirAll(dd, 0o700); err != nil {
				return nil, fmt.Errorf("docker: data dir: %w", err)
			}
			if err := os.WriteFile(filepath.Join(dd, node.IdentityFile), b, 0o600); err != nil {
				return nil, fmt.Errorf("docker: identity: %w", err)
			}
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// start makes the networks, the delayer and the agents, and waits for
// every agent's API.
func (t *Testnet) start(ctx context.Context) error {
	if err := t.createNetworks(ctx); err != nil {
		return err
	}
	if t.st.Shaper == ShaperNFQueue {
		if err := t.startDelayer(ctx); err != nil {
			return err
		}
	}
	begin := time.Now()
	pids := &pidTable{pids: map[string]int{}}
	// A container starts once the one it joins through answers: an agent
	// whose bootstrap peer is not up yet may stay alone. Containers are
	// taken in order, so the one waited for is always started already.
	ready := make([]chan struct{}, len(t.st.Containers))
	for i := range ready {
		ready[i] = make(chan struct{})
	}
	ctx, cancel := context.WithCancel(ctx) // the first failure stops the waiters
	defer cancel()
	err := forEach(ctx, len(t.st.Containers), t.cfg.Parallel, func(i int) error {
		c := t.st.Containers[i]
		if c.JoinsVia >= 0 {
			select {
			case <-ready[c.JoinsVia]:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := t.startAgent(ctx, c, pids)
		if err == nil {
			err = t.awaitAPI(ctx, c)
		}
		if err != nil {
			cancel()
			return err
		}
		close(ready[i])
		return nil
	})
	if err != nil {
		return err
	}
	t.cfg.logf("started %d agents in %v", len(t.st.Containers), time.Since(begin).Round(time.Millisecond))
	return nil
}

func (t *Testnet) createNetworks(ctx context.Context) error {
	// Internal networks: no route out of the testnet, no NAT; agents talk
	// only to each other.
	create := func(name, role string, subnet netip.Prefix, extra ...string) error {
		args := append([]string{"network", "create", "--driver", "bridge", "--internal",
			"--subnet", subnet.String(), "--gateway", gateway(subnet).String(),
			"--label", LabelTestnet + "=" + t.cfg.Name, "--label", LabelRole + "=" + role}, extra...)
		_, err := t.docker.run(ctx, append(args, name)...)
		return err
	}
	if err := create(t.wanName(), "wan", t.st.Addrs.WAN); err != nil {
		return err
	}
	for s, site := range t.st.Layout.Sites {
		if err := create(t.netName(site.Name), "site", t.st.Addrs.SiteSubnet(s), "--label", LabelSite+"="+site.Name); err != nil {
			return err
		}
	}
	return nil
}

// startAgent creates the container on its site network, connects it to
// the wan, starts it and shapes its traffic.
func (t *Testnet) startAgent(ctx context.Context, c Container, pids *pidTable) error {
	args := []string{"create", "--name", c.Name, "--hostname", c.Short(),
		"--label", LabelTestnet + "=" + t.cfg.Name, "--label", LabelRole + "=agent", "--label", LabelSite + "=" + c.SiteName,
		"--network", t.netName(c.SiteName), "--ip", c.SiteIP.String(),
		"-v", c.DataDir + ":" + containerDataDir, "--stop-timeout", "5",
		"--log-opt", "max-size=1m", "--log-opt", "max-file=1", t.st.Image}
	if _, err := t.docker.run(ctx, append(args, t.agentArgs(c)...)...); err != nil {
		return err
	}
	if _, err := t.docker.run(ctx, "network", "connect", "--ip", c.WANIP.String(), t.wanName(), c.Name); err != nil {
		return err
	}
	if _, err := t.docker.run(ctx, "start", c.Name); err != nil {
		return err
	}
	pid, err := t.docker.pid(ctx, c.Name)
	if err != nil {
		return err
	}
	if err := t.shape(ctx, c, pid); err != nil {
		return err
	}
	return pids.set(c.Name, pid, t)
}

// awaitAPI waits until the agent of c answers on its socket with the
// identity it was given.
func (t *Testnet) awaitAPI(ctx context.Context, c Container) error {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.ReadyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		last := probeAPI(ctx, c)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: agent %s did not answer in %v (docker logs %s): %w", c.Name, t.cfg.ReadyTimeout, c.Name, last)
		case <-tick.C:
		}
	}
}

func probeAPI(ctx context.Context, c Container) error {
	cl, err := node.Dial(c.DataDir)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	info, err := cl.ID(ctx)
	if err != nil {
		return err
	}
	if info.ID != c.PeerID {
		return fmt.Errorf("agent answers as %s, planned %s", info.ID, c.PeerID)
	}
	return nil
}

// pidTable collects the PIDs of started containers and rewrites the
// delayer's targets as they come.
type pidTable struct {
	mu   sync.Mutex
	pids map[string]int
}

func (p *pidTable) set(name string, pid int, t *Testnet) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pids[name] = pid
	return t.writeDelays(p.pids)
}

// freeAddrPlan picks 10.b.0.0/16 and 10.b+1.0.0/16 that no docker network
// and no host interface uses.
func freeAddrPlan(ctx context.Context, d dockerCLI) (AddrPlan, error) {
	used, err := usedPrefixes(ctx, d)
	if err != nil {
		return AddrPlan{}, err
	}
	for b := 90; b < 250; b += 2 {
		a := addrPlanAt(byte(b))
		if !overlapsAny(a.Sites, used) && !overlapsAny(a.WAN, used) {
			return a, nil
		}
	}
	return AddrPlan{}, errors.New("docker: no free pair of /16 in 10.90.0.0 to 10.249.255.255")
}

func usedPrefixes(ctx context.Context, d dockerCLI) ([]netip.Prefix, error) {
	var used []netip.Prefix
	ids, err := d.lines(ctx, "network", "ls", "-q")
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		out, err := d.run(ctx, append([]string{"network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}} {{end}}"}, ids...)...)
		if err != nil {
			return nil, err
		}
		for f := range strings.FieldsSeq(out) {
			if p, err := netip.ParsePrefix(f); err == nil {
				used = append(used, p)
			}
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("docker: host addresses: %w", err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			used = append(used, p.Masked())
		}
	}
	return used, nil
}

func overlapsAny(p netip.Prefix, used []netip.Prefix) bool {
	for _, u := range used {
		if p.Overlaps(u) {
			return true
		}
	}
	return false
}
