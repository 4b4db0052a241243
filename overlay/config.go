package overlay

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"
)

// Config tunes the overlay. Start from DefaultConfig (or FastConfig in
// tests) and change what you need; New refuses a Config that does not
// validate.
type Config struct {
	// K is how many lowest-RTT peers are neighbours. 6: enough redundancy
	// for a flood to survive a few dead peers inside a site, few enough that
	// a flood's fan-out stays small (200-node mocknet: ~78% same-site links).
	K int
	// Random is how many random long-range neighbours are added to the K
	// nearest. 2: with locality alone sites become islands; two random links
	// per agent keep the graph connected across sites (a small-world graph).
	Random int

	// Network is the name of the Zorilla network the agent belongs to. It
	// scopes the DHT (/zorilla/net/NAME/kad/1.0.0) and the neighbour
	// exchange, so agents of different networks never become neighbours
	// (and so never flood each other's adverts), and never join the public
	// IPFS DHT. Letters, digits and '-', at most 63.
	Network string

	// Tick is how often the overlay looks for due work (probes, exchanges,
	// walks). 1s: every other period is a multiple of it.
	Tick time.Duration
	// ProbesPerTick bounds the pings started per tick, and so the cost of
	// measuring: 4 per second per agent is negligible even at 400 agents.
	ProbesPerTick int
	// PingsPerProbe is how many pings one probe sends on one stream; the
	// smallest RTT is the sample, which filters out scheduling hiccups.
	PingsPerProbe int
	// PingTimeout bounds one probe, dial included. 5s: a peer slower than
	// that is useless as a neighbour anyway.
	PingTimeout time.Duration
	// NeighbourRefresh is how often a neighbour's RTT is measured again.
	// 15s: neighbours carry floods, so a dead one must be noticed soon.
	NeighbourRefresh time.Duration
	// Refresh is how often a known peer that is not a neighbour is measured
	// again. 5 min: it only matters if it became closer than a neighbour.
	Refresh time.Duration
	// RetryAfter is how soon a peer whose last probe failed is probed again.
	// 2s: a dead neighbour is dropped within a few seconds.
	RetryAfter time.Duration
	// Alpha is the weight of a new sample in the smoothed RTT (EWMA). 0.25:
	// one outlier moves the estimate by a quarter, four samples settle it.
	Alpha float64
	// MaxFailures is how many consecutive failed probes make a measured peer
	// dead (a peer never measured is dead after one). 2: one lost probe is
	// not a dead peer.
	MaxFailures int
	// DeadFor is how long a dead peer is ignored, unless it connects again.
	// 2 min: long enough not to flap, short enough to see a restart.
	DeadFor time.Duration
	// MaxKnown bounds the peer table. 256: enough candidates for locality in
	// networks of hundreds, bounded memory against a peer that lies.
	MaxKnown int

	// ExchangeInterval is how often the overlay asks one neighbour (round
	// robin) for its neighbours, and tells it that it is one of ours. 5s.
	ExchangeInterval time.Duration
	// ExchangeTimeout bounds one exchange, both sides. 10s.
	ExchangeTimeout time.Duration
	// InboundLease is how long a peer that said "you are my neighbour"
	// stays one of ours. 2 min: several exchange rounds, so a live peer
	// renews it long before it ends.
	InboundLease time.Duration
	// MaxInbound bounds how many peers may make us their neighbour, so no
	// agent becomes a hub that every flood crosses. 32 = 4*(K+Random).
	MaxInbound int

	// WalkInterval is how often a random-walk DHT lookup looks for peers
	// the overlay does not know yet. 1 min.
	WalkInterval time.Duration
	// WalkTimeout bounds one random walk. 30s.
	WalkTimeout time.Duration
	// DHTRefresh is the DHT routing table's own refresh period. 10 min is
	// kad-dht's default; lower it in tests.
	DHTRefresh time.Duration
}

// DefaultNetwork is the network an agent joins when its owner names none.
const DefaultNetwork = "zorilla"

// CheckNetwork accepts a network name: 1 to 63 lower-case letters, digits
// and '-', not starting with '-' (it goes into protocol IDs and, for
// public rendezvous, into a content ID).
func CheckNetwork(name string) error {
	if name == "" || len(name) > 63 || name[0] == '-' {
		return fmt.Errorf("network name %q: want 1 to 63 of a-z, 0-9 and '-', not starting with '-'", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("network name %q: %q is not allowed (a-z, 0-9 and '-' only)", name, r)
		}
	}
	return nil
}

// dhtPrefix is the DHT protocol prefix of a network.
func dhtPrefix(network string) protocol.ID { return protocol.ID("/zorilla/net/" + network) }

// ExchangeProtocol is the neighbour exchange of a network.
func ExchangeProtocol(network string) protocol.ID {
	return protocol.ID("/zorilla/net/" + network + "/overlay/1.0.0")
}

// DefaultConfig is the Config of a production agent.
func DefaultConfig() Config {
	return Config{
		K:                6,
		Random:           2,
		Network:          DefaultNetwork,
		Tick:             time.Second,
		ProbesPerTick:    4,
		PingsPerProbe:    3,
		PingTimeout:      5 * time.Second,
		NeighbourRefresh: 15 * time.Second,
		Refresh:          5 * time.Minute,
		RetryAfter:       2 * time.Second,
		Alpha:            0.25,
		MaxFailures:      2,
		DeadFor:          2 * time.Minute,
		MaxKnown:         256,
		ExchangeInterval: 5 * time.Second,
		ExchangeTimeout:  10 * time.Second,
		InboundLease:     2 * time.Minute,
		MaxInbound:       32,
		WalkInterval:     time.Minute,
		WalkTimeout:      30 * time.Second,
		DHTRefresh:       10 * time.Minute,
	}
}

// FastConfig is DefaultConfig with every period shortened, for tests and
// in-process testnets: a few dozen agents converge in seconds.
func FastConfig() Config {
	c := DefaultConfig()
	c.Tick = 50 * time.Millisecond
	c.ProbesPerTick = 2
	c.PingTimeout = time.Second
	c.NeighbourRefresh = 2 * time.Second
	c.Refresh = 20 * time.Second
	c.RetryAfter = 100 * time.Millisecond
	c.DeadFor = 5 * time.Second
	c.ExchangeInterval = 250 * time.Millisecond
	c.ExchangeTimeout = 2 * time.Second
	c.InboundLease = 6 * time.Second
	c.WalkInterval = 10 * time.Second
	c.WalkTimeout = 3 * time.Second
	c.DHTRefresh = time.Minute
	return c
}

// ScaledConfig is FastConfig for an in-process testnet of n agents: every
// period grows with n/32, so the whole testnet does about the work of 32
// fast agents and hundreds of agents fit on a small machine. Timeouts stay
// those of FastConfig.
func ScaledConfig(n int) Config {
	c := FastConfig()
	if n <= 32 {
		return c
	}
	f := float64(n) / 32
	scale := func(d *time.Duration) { *d = time.Duration(float64(*d) * f) }
	for _, d := range []*time.Duration{
		&c.Tick, &c.NeighbourRefresh, &c.Refresh, &c.RetryAfter, &c.DeadFor,
		&c.ExchangeInterval, &c.InboundLease, &c.WalkInterval, &c.DHTRefresh,
	} {
		scale(d)
	}
	return c
}

// ErrInvalidConfig is wrapped by every error of Config validation.
var ErrInvalidConfig = errors.New("overlay: invalid config")

func (c Config) validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.K >= 1, "K %d < 1", c.K)
	check(c.Random >= 0, "Random %d < 0", c.Random)
	if err := CheckNetwork(c.Network); err != nil {
		errs = append(errs, err)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"Tick", c.Tick}, {"PingTimeout", c.PingTimeout}, {"NeighbourRefresh", c.NeighbourRefresh},
		{"Refresh", c.Refresh}, {"RetryAfter", c.RetryAfter}, {"DeadFor", c.DeadFor},
		{"ExchangeInterval", c.ExchangeInterval}, {"ExchangeTimeout", c.ExchangeTimeout},
		{"InboundLease", c.InboundLease}, {"WalkInterval", c.WalkInterval},
		{"WalkTimeout", c.WalkTimeout}, {"DHTRefresh", c.DHTRefresh},
	} {
		check(d.d > 0, "%s %v must be positive", d.name, d.d)
	}
	check(c.ProbesPerTick >= 1, "ProbesPerTick %d < 1", c.ProbesPerTick)
	check(c.PingsPerProbe >= 1 && c.PingsPerProbe <= 16, "PingsPerProbe %d not in [1,16]", c.PingsPerProbe)
	check(c.Alpha > 0 && c.Alpha <= 1, "Alpha %v not in (0,1]", c.Alpha)
	check(c.MaxFailures >= 1, "MaxFailures %d < 1", c.MaxFailures)
	check(c.MaxKnown >= c.K+c.Random, "MaxKnown %d < K+Random %d", c.MaxKnown, c.K+c.Random)
	check(c.MaxInbound >= 0, "MaxInbound %d < 0", c.MaxInbound)
	// A neighbour renews its lease once per round over its K+Random
	// neighbours; the lease must outlive a round.
	round := c.ExchangeInterval * time.Duration(c.K+c.Random)
	check(c.InboundLease > round, "InboundLease %v must exceed ExchangeInterval*(K+Random) = %v", c.InboundLease, round)
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, oneLine(errs))
	}
	return nil
}

// Validate reports whether c can be used by New; errors wrap
// ErrInvalidConfig. Callers that assemble a Config from user input check it
// before building anything.
func (c Config) Validate() error { return c.validate() }

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
