package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/worker"
)

// priorityConfig reads --max-priority, --priority-cap PEER=N,
// --max-swap-slice and --swap-policy.
func priorityConfig(c *cli.Context, cfg *node.Config) error {
	cfg.MaxSwapSlice = c.Duration("max-swap-slice")
	if cfg.MaxSwapSlice < 0 || cfg.MaxSwapSlice > proto.MaxSwapSlice {
		return usageErrorf("--max-swap-slice: must be 0..%v, got %v", proto.MaxSwapSlice, cfg.MaxSwapSlice)
	}
	sp, err := gang.ParsePolicy(strings.TrimSpace(c.String("swap-policy")))
	if err != nil {
		return usageErrorf("--swap-policy: %q: want sequential or overlapped", c.String("swap-policy"))
	}
	cfg.SwapPolicy = sp
	cfg.MaxPriority = c.Int("max-priority")
	if err := proto.CheckPriority(cfg.MaxPriority); err != nil {
		return usageErrorf("--max-%v", err)
	}
	caps := trimAll(c.StringSlice("priority-cap"))
	if len(caps) > worker.MaxPriorityCaps {
		return usageErrorf("--priority-cap: at most %d entries, got %d", worker.MaxPriorityCaps, len(caps))
	}
	for _, e := range caps {
		id, n, err := parsePriorityCap(e)
		if err != nil {
			return usageErrorf("--priority-cap %q: %v", e, err)
		}
		if cfg.PriorityCaps == nil {
			cfg.PriorityCaps = map[peer.ID]int{}
		}
		cfg.PriorityCaps[id] = n
	}
	return nil
}

// parsePriorityCap reads PEER=N.
func parsePriorityCap(s string) (peer.ID, int, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return "", 0, fmt.Errorf("want PEER=N")
	}
	id, err := peer.Decode(strings.TrimSpace(k))
	if err != nil {
		return "", 0, fmt.Errorf("peer: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return "", 0, fmt.Errorf("priority: %q is not a whole number", v)
	}
	if err := proto.CheckPriority(n); err != nil {
		return "", 0, err
	}
	return id, n, nil
}
