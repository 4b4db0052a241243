package localnet

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// awaitNeighbours waits until every agent has neighbours to flood to and
// a flood from any agent reaches every other one along them. Agents that
// know each other are not yet linked: right after the start a third of a
// network's agents can be outside every radius of agent 0's flood, and a
// spread job then lands on the others.
func (n *Net) awaitNeighbours(ctx context.Context) error {
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
				return fmt.Errorf("agent %s has fewer than %d neighbours after %v: %w", short.Name, want, neighbourWait, ctx.Err())
			}
			return fmt.Errorf("the agents' neighbours do not link them all after %v: %w", neighbourWait, ctx.Err())
		case <-tick.C:
		}
		for _, a := range n.agents {
			select {
			case <-a.exited:
				return fmt.Errorf("agent %s exited (%v); its log %s:\n%s", a.Name, a.err, a.LogPath, LogTail(a.LogPath))
			default:
			}
		}
	}
}

// links asks every agent for its neighbours: the flood's links, by agent
// index, and the first agent with fewer than want, if any.
func (n *Net) links(ctx context.Context, want int) ([][]int, *Agent) {
	index := map[peer.ID]int{}
	for i, a := range n.agents {
		index[a.ID.ID] = i
	}
	links := make([][]int, len(n.agents))
	var short *Agent
	for i, a := range n.agents {
		info, err := a.Client.Peers(ctx)
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
