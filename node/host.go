package node

import (
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/libp2p/go-libp2p"
	coreconnmgr "github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/x/rate"
)

// userAgent names Zorilla agents in identify.
const userAgent = "zorilla/0.1"

// newHost builds the agent's libp2p host: TCP and QUIC (TCP alone,
// delayed, with a testnet delay), the connection manager that trims
// non-neighbours, and a resource manager that does not choke testnets on
// private subnets. Metrics, relays and the other transports are left out:
// an idle agent must stay small.
func newHost(cfg Config, key crypto.PrivKey, nat *natSide, gater coreconnmgr.ConnectionGater, extra ...libp2p.Option) (host.Host, error) {
	tpts, err := transports(cfg)
	if err != nil {
		return nil, err
	}
	cm, err := connmgr.NewConnManager(cfg.ConnLow, cfg.ConnHigh, connmgr.WithGracePeriod(cfg.ConnGrace))
	if err != nil {
		return nil, fmt.Errorf("node: connection manager: %w", err)
	}
	rm, err := newResourceManager(cfg.TrustedSubnets)
	if err != nil {
		_ = cm.Close()
		return nil, err
	}
	opts := append(tpts,
		libp2p.Identity(key),
		libp2p.ListenAddrStrings(cfg.Listen...),
		libp2p.ConnectionManager(cm),
		libp2p.ResourceManager(rm),
		libp2p.UserAgent(userAgent),
		libp2p.DisableMetrics(),
		libp2p.Ping(true),
	)
	if nat != nil {
		opts = append(opts, natOptions(cfg, nat)...)
	} else {
		opts = append(opts, libp2p.DisableRelay())
	}
	if gater != nil {
		opts = append(opts, libp2p.ConnectionGater(gater))
	}
	h, err := libp2p.New(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("node: start libp2p host on %v: %w", cfg.Listen, err)
	}
	return h, nil
}

// newResourceManager is libp2p's resource manager with the agent's limits
// (agentLimits), and the per-IP connection limit and connection rate limit
// lifted for loopback and the trusted subnets. libp2p allows 8 connections per remote IPv4
// address outside 127.0.0.0/8: agents of a testnet behind one address
// would stall at 8 peers.
func newResourceManager(subnets []string) (network.ResourceManager, error) {
	v4 := append([]rcmgr.NetworkPrefixLimit{}, rcmgr.DefaultNetworkPrefixLimitV4...)
	v6 := append([]rcmgr.NetworkPrefixLimit{}, rcmgr.DefaultNetworkPrefixLimitV6...)
	unlimitedRate := []rate.PrefixLimit{
		{Prefix: netip.MustParsePrefix("127.0.0.0/8")},
		{Prefix: netip.MustParsePrefix("::1/128")},
	}
	for _, s := range subnets {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%w: trusted subnet %q: %w", ErrInvalidConfig, s, err)
		}
		p = p.Masked()
		lim := rcmgr.NetworkPrefixLimit{Network: p, ConnCount: math.MaxInt}
		if p.Addr().Is4() {
			v4 = append(v4, lim)
		} else {
			v6 = append(v6, lim)
		}
		unlimitedRate = append(unlimitedRate, rate.PrefixLimit{Prefix: p})
	}
	rm, err := rcmgr.NewResourceManager(
		rcmgr.NewFixedLimiter(agentLimits()),
		rcmgr.WithNetworkPrefixLimit(v4, v6),
		rcmgr.WithConnRateLimiters(connRateLimiter(unlimitedRate)),
		rcmgr.WithMetricsDisabled(), // its trace costs CPU on every stream
	)
	if err != nil {
		return nil, fmt.Errorf("node: resource manager: %w", err)
	}
	return rm, nil
}

// connRateLimiter is libp2p's default connection rate limiter (a burst of
// 16 then one connection per 5s per IPv4 address), without limit for the
// given prefixes.
func connRateLimiter(unlimited []rate.PrefixLimit) *rate.Limiter {
	perIP := rate.Limit{RPS: 0.2, Burst: 16}
	return &rate.Limiter{
		NetworkPrefixLimits: unlimited,
		SubnetRateLimiter: rate.SubnetLimiter{
			IPv4SubnetLimits: []rate.SubnetLimit{{PrefixLength: 32, Limit: perIP}},
			IPv6SubnetLimits: []rate.SubnetLimit{
				{PrefixLength: 56, Limit: perIP},
				{PrefixLength: 48, Limit: rate.Limit{RPS: 0.5, Burst: 80}},
			},
			GracePeriod: time.Minute,
		},
	}
}
