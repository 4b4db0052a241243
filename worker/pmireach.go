package worker

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// pmiDialTimeout bounds the direct dial to each other host of a PMI job.
const pmiDialTimeout = 5 * time.Second

// pmiDialers bounds the dials a host makes at once for that check.
const pmiDialers = 16

// checkPMIReach makes sure this agent is connected directly (not through
// a relay) to every other host of a PMI job, dialling the addresses the
// commit gives: MPICH's ranks open TCP connections to each other on the
// hosts' addresses, so a pair of hosts that only a relay joins (behind
// different NATs) cannot run the job. The error names the hosts. It
// returns, for each other host, the local network interfaces of this
// agent's direct connections to it.
func (r *running) checkPMIReach(ctx context.Context) ([][]string, error) {
	h := r.svc.h
	var (
		mu     sync.Mutex
		bad    []string
		ifaces [][]string
		wg     sync.WaitGroup
		sem    = make(chan struct{}, pmiDialers)
	)
	for _, ref := range r.c.Hosts {
		if ref.Peer == h.ID() {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := r.dialDirect(ctx, ref)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s (%v)", ref.Peer.ShortString(), err))
				return
			}
			ifaces = append(ifaces, localIfaces(h.Network().ConnsToPeer(ref.Peer)))
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		return nil, fmt.Errorf("pmi: host %s cannot reach %d other host(s) of the job directly, only through a relay or not at all: %v; "+
			"MPICH's ranks connect to each other directly, so this placement cannot work (hosts behind different NATs?)",
			h.ID().ShortString(), len(bad), bad)
	}
	return ifaces, nil
}

// dialDirect returns nil once this agent has a direct connection to ref.
func (r *running) dialDirect(ctx context.Context, ref proto.HostRef) error {
	h := r.svc.h
	if hasDirect(h.Network().ConnsToPeer(ref.Peer)) {
		return nil
	}
	info := peer.AddrInfo{ID: ref.Peer}
	for _, s := range ref.Addrs {
		if a, err := ma.NewMultiaddr(s); err == nil {
			info.Addrs = append(info.Addrs, a)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, pmiDialTimeout)
	defer cancel()
	ctx = network.WithForceDirectDial(ctx, "zorilla pmi: MPICH ranks connect directly")
	if err := h.Connect(ctx, info); err != nil {
		return err
	}
	if !hasDirect(h.Network().ConnsToPeer(ref.Peer)) {
		return fmt.Errorf("connected only through a relay")
	}
	return nil
}

// hasDirect reports a connection that does not go through a relay.
func hasDirect(conns []network.Conn) bool {
	for _, c := range conns {
		if _, err := c.RemoteMultiaddr().ValueForProtocol(ma.P_CIRCUIT); err != nil {
			return true
		}
	}
	return false
}

// localIfaces names the interfaces (loopback left out) that carry the
// direct connections among conns on this side.
func localIfaces(conns []network.Conn) []string {
	var out []string
	for _, c := range conns {
		if _, err := c.RemoteMultiaddr().ValueForProtocol(ma.P_CIRCUIT); err == nil {
			continue
		}
		ip, err := manet.ToIP(c.LocalMultiaddr())
		if err != nil || ip.IsLoopback() {
			continue
		}
		if name := ifaceOf(ip); name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// ifaceOf names the interface that holds ip, or "".
func ifaceOf(ip net.IP) string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return i.Name
			}
		}
	}
	return ""
}

// netDevices picks the interfaces MPICH's transports should use from
// those that carry this agent's connections to each other host (one list
// per host): those every host is reached through, else all of them.
// MPICH (through UCX) otherwise offers its peers an address on every
// interface and may pick one they cannot reach (a container's site
// bridge, seen from another site). A job whose every host is this machine
// (no list names an interface) uses loopback alone: UCX otherwise opens
// every interface of the machine at MPI_Init, and one that goes away
// meanwhile (a container's veth) fails the rank's MPI_Init with "No such
// device" (seen once in TestPMILoopback while the docker tests ran).
// Shared memory between ranks is not a network device and stays.
func netDevices(perHost [][]string, loopback string) []string {
	var common, all []string
	first := true
	for _, ifs := range perHost {
		if len(ifs) == 0 {
			continue // reached over loopback only: the same machine
		}
		for _, i := range ifs {
			if !slices.Contains(all, i) {
				all = append(all, i)
			}
		}
		if first {
			common, first = slices.Clone(ifs), false
			continue
		}
		common = slices.DeleteFunc(common, func(i string) bool { return !slices.Contains(ifs, i) })
	}
	if len(common) == 0 {
		common = all
	}
	if len(common) == 0 && loopback != "" {
		return []string{loopback}
	}
	slices.Sort(common)
	return common
}

// loopbackName names this machine's loopback interface, or "".
func loopbackName() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 && i.Flags&net.FlagUp != 0 {
			return i.Name
		}
	}
	return ""
}

// pmiNetEnv is the environment that points MPICH's transports at devices,
// unless the job's own environment already chose.
func pmiNetEnv(jobEnv, devices []string) []string {
	if len(devices) == 0 {
		return nil
	}
	var out []string
	for _, kv := range []string{"UCX_NET_DEVICES=" + strings.Join(devices, ","), "FI_TCP_IFACE=" + devices[0]} {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(jobEnv, func(e string) bool { return strings.HasPrefix(e, k+"=") }) {
			out = append(out, kv)
		}
	}
	return out
}
