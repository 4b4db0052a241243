package node

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/overlay"
)

// ErrInvalidConfig is wrapped by every Config validation error.
var ErrInvalidConfig = errors.New("node: invalid config")

// Config is an agent's configuration: where it keeps its state, how it
// reaches the network, and the owner's settings that the worker enforces.
type Config struct {
	// DataDir holds the identity key (identity.key) and the control API
	// socket (agent.sock). Empty: an in-memory identity and no API, for
	// in-process testnets of hundreds of agents.
	DataDir string
	// Listen are the multiaddrs the host listens on.
	Listen []string
	// ReusePort lets the agent listen on a TCP port another socket already
	// holds (libp2p binds with SO_REUSEPORT: the kernel then splits new
	// connections between them). False, the default: New refuses a port in
	// use with ErrPortInUse, since a second agent on one port gets a share
	// of the first one's connections and neither works well.
	ReusePort bool
	// Bootstrap are full multiaddrs (with /p2p/) of agents to join through.
	// Empty: this is a first agent, that others bootstrap from.
	Bootstrap []string
	// PublicBootstrap are the public DHT's bootstrap peers (full
	// multiaddrs) used when Bootstrap holds PublicBootstrapWord; empty: the
	// Amino DHT's peers that go-libp2p-kad-dht ships.
	PublicBootstrap []string
	// Rendezvous tunes the public rendezvous (its Network and Peers are
	// set from Network and PublicBootstrap).
	Rendezvous overlay.RendezvousConfig
	// Reachability is how the agent learns whether others can dial it
	// (ReachAuto: AutoNAT v2; ReachPublic or ReachPrivate to force it).
	// RelayReservations and RelayCircuits bound the relay a reachable
	// agent serves to its network. These apply to an agent joining
	// through the public DHT, which also gets relays and hole punching.
	Reachability                     string
	RelayReservations, RelayCircuits int
	// MDNS finds the network's agents on the local network by multicast
	// DNS (overlay.LAN). Off in DefaultConfig, so that in-process agents
	// (tests, testnets) send no multicast; the zorilla command turns it on
	// unless --mdns=false.
	MDNS bool
	// Network names the Zorilla network the agent joins (overlay.Network):
	// agents of different networks never become neighbours nor see each
	// other's adverts. It overrides Overlay.Network and Services.Flood.
	Network string

	// Owner settings, used by the worker (P2P-MPI's J and P).
	Cores    int      // cores offered
	MaxJobs  int      // J: applications running or reserved at once
	MaxProcs int      // P: processes of one application on this host
	Memory   int64    // bytes offered
	Labels   []string // e.g. "gpu", "site=nancy"; jobs may require them
	// MaxPriority and PriorityCaps cap the job priority this owner honours
	// (worker.Policy): by default 0 for every submitter.
	MaxPriority  int
	PriorityCaps map[peer.ID]int
	// MaxSwapSlice caps the swap slice of the jobs here (worker.Policy):
	// 0, no cap.
	MaxSwapSlice time.Duration
	// SwapPolicy is how jobs swapped out by checkpoint for their equals
	// give way here (worker.Policy): sequential (the default) or
	// overlapped.
	SwapPolicy gang.Policy
	// AllowFile and DenyFile list submitter peer IDs, one per line; empty:
	// <DataDir>/allow and <DataDir>/deny, which may be absent (empty
	// lists) and which `zorilla trust` edits. Trust by default: only the
	// agent itself and the submitters allowed are accepted, unless Open,
	// which ignores the allow list (testnets, demos). The deny list always
	// applies. Node.ReloadTrust reads the files again (SIGHUP).
	AllowFile, DenyFile string
	Open                bool

	// The sandbox of jobs (see SECURITY.md). RunAs says who jobs run as
	// when the agent is root: RunAsAuto, a user ID of their own per running
	// job from UIDRange ("FIRST-LAST", empty: proc.DefaultUIDRange);
	// RunAsNone, root; or a user name, UID or UID:GID. JobNetwork is
	// JobNetworkIsolated (a network namespace with only loopback, where the
	// kernel allows it) or JobNetworkHost.
	RunAs, UIDRange, JobNetwork string

	// Overlay tunes membership and the neighbour set.
	Overlay overlay.Config
	// Services tunes flood, worker, leases, submitter and processes.
	Services Services

	// TrustedSubnets are IP prefixes whose peers are not limited to libp2p's
	// default 8 connections per remote IP (and its connection rate limit).
	// Loopback is never limited; testnets on container or namespace subnets
	// need theirs here, or agents stall at 8 peers.
	TrustedSubnets []string
	// ConnLow and ConnHigh are the connection manager's watermarks: above
	// High it trims unprotected connections down to Low. Neighbours are
	// protected.
	ConnLow, ConnHigh int
	// ConnGrace is how long a new connection is safe from trimming.
	ConnGrace time.Duration
	// ShutdownTimeout bounds how long Close waits for API requests.
	ShutdownTimeout time.Duration
	// Web is where the read-only web view and /metrics listen (HOST:PORT,
	// port 0 for any free one); empty: no view. See package node/web.
	Web string
	// WebNext serves the view on the next free port after Web's when that
	// one is taken, rather than refuse to start: for the default address,
	// which every agent of a machine wants. An address the owner chose is
	// refused when taken, so the view is never somewhere they do not look.
	WebNext bool

	// TestnetDelay is for testnets whose kernel has no netem: items
	// "SUBNET=DELAY" (e.g. "10.90.1.0/24=5ms") that delay what this agent
	// sends over TCP to peers whose address is in SUBNET, by DELAY, in [0,
	// 5s]; the longest matching subnet applies. Each agent delays only what
	// it sends, so the RTT between two agents is the sum of their delays
	// towards each other. With it the host runs TCP only (QUIC would pass
	// undelayed): a QUIC listen address is an error. Ignored with WithHost.
	// Empty, the default: nothing is delayed.
	TestnetDelay []string
}

// DefaultConfig is an agent's configuration when the owner sets nothing.
// DataDir is empty: the zorilla command sets it (~/.zorilla by default).
func DefaultConfig() Config {
	cores := runtime.NumCPU()
	return Config{
		// Zorilla's customary port on every interface, TCP and QUIC.
		Listen:     []string{"/ip4/0.0.0.0/tcp/4001", "/ip4/0.0.0.0/udp/4001/quic-v1"},
		Network:    overlay.DefaultNetwork,
		Rendezvous: overlay.DefaultRendezvousConfig(overlay.DefaultNetwork, nil),
		// libp2p's defaults for the counts: a relay holds 128 agents' slots
		// and 16 circuits each.
		Reachability:      ReachAuto,
		RelayReservations: 128,
		RelayCircuits:     16,
		Cores:             cores,
		// One foreign application at a time, all cores to it: the usual
		// P2P-MPI setting (J=1, P=cores).
		MaxJobs:  1,
		MaxProcs: cores,
		Memory:   TotalMemory(),
		Overlay:  overlay.DefaultConfig(),
		Services: DefaultServices(),
		// The sandbox is on: a job's code is a stranger's.
		RunAs:      RunAsAuto,
		JobNetwork: JobNetworkIsolated,
		// The private ranges (RFC 1918, carrier-grade NAT, IPv6 ULA): where
		// container and lab testnets live.
		TrustedSubnets: []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7"},
		// Room for a few dozen agents fully connected, few enough that an
		// idle agent stays small; trimming only drops non-neighbours.
		ConnLow:  64,
		ConnHigh: 128,
		// A minute lets a new connection finish identify and a probe.
		ConnGrace:       time.Minute,
		ShutdownTimeout: 3 * time.Second,
	}
}

// Bounds on owner settings.
const (
	maxLabels   = 64
	maxLabelLen = 128
	minMemory   = 1 << 20
)

func (c Config) validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(checkListen(c.Listen))
	add(overlay.CheckNetwork(c.Network))
	add(checkNAT(c))
	add(checkWeb(c.Web))
	_, err := ParseBootstrap(c.Bootstrap)
	add(err)
	if _, err := ParseBootstrap(c.PublicBootstrap); err != nil {
		add(fmt.Errorf("public %w", err))
	}
	add(checkOwner(c))
	add(checkSandbox(c))
	for _, s := range c.TrustedSubnets {
		if _, err := netip.ParsePrefix(s); err != nil {
			add(fmt.Errorf("trusted subnet %q: %w", s, err))
		}
	}
	if c.ConnLow < 1 || c.ConnHigh < c.ConnLow {
		add(fmt.Errorf("connection watermarks low %d high %d: want 1 <= low <= high", c.ConnLow, c.ConnHigh))
	}
	if c.ConnGrace < 0 || c.ShutdownTimeout <= 0 {
		add(fmt.Errorf("conn grace %v and shutdown timeout %v must be positive", c.ConnGrace, c.ShutdownTimeout))
	}
	add(c.Overlay.Validate())
	_, err = testnetDelay(c)
	add(err)
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, oneLine(errs))
	}
	return nil
}

func checkListen(addrs []string) error {
	for _, s := range addrs {
		if _, err := ma.NewMultiaddr(s); err != nil {
			return fmt.Errorf("listen address %q: %w", s, err)
		}
	}
	return nil
}

func checkOwner(c Config) error {
	var errs []error
	if c.Cores < 1 {
		errs = append(errs, fmt.Errorf("cores %d < 1", c.Cores))
	}
	if c.MaxJobs < 1 {
		errs = append(errs, fmt.Errorf("max jobs %d < 1", c.MaxJobs))
	}
	if c.MaxProcs < 1 {
		errs = append(errs, fmt.Errorf("max procs %d < 1", c.MaxProcs))
	}
	if c.Memory < minMemory {
		errs = append(errs, fmt.Errorf("memory %d bytes < 1 MiB", c.Memory))
	}
	if len(c.Labels) > maxLabels {
		errs = append(errs, fmt.Errorf("%d labels exceed %d", len(c.Labels), maxLabels))
	}
	for _, l := range c.Labels {
		if l == "" || len(l) > maxLabelLen || strings.ContainsAny(l, ", \t\n\r") {
			errs = append(errs, fmt.Errorf("label %q: want 1-%d characters, no comma or space", l, maxLabelLen))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return oneLine(errs)
}

// PublicBootstrapWord, given as a bootstrap address, makes the agent find
// its network's other agents through the public DHT (overlay.Rendezvous).
const PublicBootstrapWord = "public"

// Public reports whether the agent joins through the public DHT.
func (c Config) Public() bool { return slices.Contains(c.Bootstrap, PublicBootstrapWord) }

// ParseBootstrap parses bootstrap multiaddrs, each ending in /p2p/<peer
// ID>; addresses of the same peer are merged. The word "public" is
// skipped: it is not an address (PublicBootstrapWord).
func ParseBootstrap(addrs []string) ([]peer.AddrInfo, error) {
	var mas []ma.Multiaddr
	for _, s := range addrs {
		if s == PublicBootstrapWord {
			continue
		}
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("bootstrap address %q: %w", s, err)
		}
		if _, err := peer.AddrInfoFromP2pAddr(a); err != nil {
			return nil, fmt.Errorf("bootstrap address %q: want a full address ending in /p2p/<peer ID>: %w", s, err)
		}
		mas = append(mas, a)
	}
	infos, err := peer.AddrInfosFromP2pAddrs(mas...)
	if err != nil {
		return nil, fmt.Errorf("bootstrap addresses: %w", err)
	}
	return infos, nil
}

// oneLine joins errors with "; ", so a CLI prints them on one line.
func oneLine(errs []error) error { return joined(errs) }

type joined []error

func (j joined) Error() string {
	msgs := make([]string, len(j))
	for i, err := range j {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (j joined) Unwrap() []error { return j }
