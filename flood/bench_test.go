package flood

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// randomGraph links every node to k random others, both ways (seeded), as a
// stand-in for an overlay without locality.
func randomGraph(n, k int, seed int64) [][]int {
	rng := rand.New(rand.NewSource(seed))
	set := make([]map[int]bool, n)
	for i := range set {
		set[i] = map[int]bool{}
	}
	for i := range n {
		for len(set[i]) < k {
			j := rng.Intn(n)
			if j != i {
				set[i][j], set[j][i] = true, true
			}
		}
	}
	adj := make([][]int, n)
	for i, s := range set {
		for j := range n {
			if s[j] {
				adj[i] = append(adj[i], j)
			}
		}
	}
	return adj
}

// BenchmarkFlood400 floods one job with radius 1, 2, ... up to MaxTTL over
// 400 agents on mocknet, each radius once the previous one has reached
// every peer it can, and reports advert messages per agent for the whole
// sequence. Run: go test -run XXX -bench Flood400 -benchtime 1x ./flood
func BenchmarkFlood400(b *testing.B) {
	for name, adj := range map[string][][]int{"grid20x20": grid(20, 20), "random-k4": randomGraph(400, 4, 1)} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				benchFlood(b, adj)
			}
		})
	}
}

func benchFlood(b *testing.B, adj [][]int) {
	b.StopTimer()
	c := newCluster(b, adj, nil)
	b.StartTimer()
	src, job := len(adj)/2+10, "bench"
	dist := hops(adj, src)
	var msgs uint64
	for r := 1; r <= c.fl[src].cfg.MaxTTL; r++ {
		start := time.Now()
		if err := c.fl[src].Flood(context.Background(), Advert{Job: job}, r); err != nil {
			b.Fatal(err)
		}
		reached := 0
		for i, d := range dist {
			if d > 0 && d <= r {
				reached++
				waitFor(b, fmt.Sprint("peer ", i), func() bool { return lastTTL(c.rec[i].deliveries(), job) == r-d+1 })
			}
		}
		msgs = waitSent(b, c, adj)
		b.Logf("radius %2d: %3d peers reached in %v, %5d messages in all (%.1f per agent)",
			r, reached, time.Since(start).Round(time.Millisecond), msgs, float64(msgs)/float64(len(adj)))
	}
	b.ReportMetric(float64(msgs)/float64(len(adj)), "msgs/agent")
}
