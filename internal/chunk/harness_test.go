package chunk

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStagingHarness prints the staging of a 20 MB file to many hosts at
// once on mocknet, every host a chunk service (not a whole agent):
// "owner only" gives each host a host list of itself alone, so every chunk
// comes from the owner, the bytes today's whole-file fetch sends; "peers"
// gives the job's host list. Opt-in, for BENCHMARKS.md:
//
//	ZORILLA_CHUNK_HOSTS=16,64 go test ./internal/chunk -run TestStagingHarness -v -timeout 30m
func TestStagingHarness(t *testing.T) {
	list := os.Getenv("ZORILLA_CHUNK_HOSTS")
	if list == "" {
		t.Skip("set ZORILLA_CHUNK_HOSTS (e.g. 16,64) to measure staging")
	}
	const size = 20 << 20
	rows := []string{"| hosts | fetch from | owner sent | x file | hosts sent | time to stage all |", "|---|---|---|---|---|---|"}
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			t.Fatalf("ZORILLA_CHUNK_HOSTS: %q is not a host count", f)
		}
		for _, peers := range []bool{false, true} {
			as := swarm(t, n+1, testConfig())
			owner, hosts := as[0], as[1:]
			_, h := putRandom(t, owner, size)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			begin := time.Now()
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i, a := range hosts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					list := hosts
					if !peers {
						list = []*agent{a}
					}
					_, errs[i] = a.svc.Fetch(ctx, fetchOf(a, owner, h, list))
				}()
			}
			wg.Wait()
			took := time.Since(begin)
			cancel()
			var sent int64
			for i, a := range hosts {
				if errs[i] != nil {
					t.Fatalf("%d hosts, host %d: %v", n, i, errs[i])
				}
				sent += a.svc.Stats().ServedAsPeer
			}
			o := owner.svc.Stats().ServedAsOwner
			mode := "owner only (before)"
			if peers {
				mode = "peers (after)"
			}
			rows = append(rows, fmt.Sprintf("| %d | %s | %.1f MB | %.2fx | %.1f MB | %.2f s |",
				n, mode, float64(o)/1e6, float64(o)/size, float64(sent)/1e6, took.Seconds()))
			for _, a := range as {
				_ = a.ep.Close()
				_ = a.h.Close()
			}
		}
	}
	t.Logf("\n%s", strings.Join(rows, "\n"))
}
