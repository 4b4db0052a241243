package testnet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

// jobNet starts n agents on loopback, each offering procs slots, with fast
// job timeouts, and waits until every agent has neighbours.
func jobNet(t *testing.T, n, procs int) *Net {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	net, err := Loopback(ctx, n, Options{Seed: 1, Configure: func(i int, cfg *node.Config) {
		cfg.Cores, cfg.MaxProcs, cfg.MaxJobs = procs, procs, 2
		cfg.Services.Submitter = FastSubmitter()
		cfg.Services.Flood.Rate, cfg.Services.Flood.Burst = 1000, 1000
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = net.Close() })
	if err := net.Await(ctx, "every agent has neighbours", func() bool {
		for _, nd := range net.Nodes {
			if len(nd.Overlay().Neighbours()) < min(n-1, 2) {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return net
}

// FastSubmitter is a submitter config for tests: short waits everywhere.
func FastSubmitter() submitter.Config {
	c := submitter.DefaultConfig()
	c.Schedule.First = 100 * time.Millisecond
	c.OfferGrace = 100 * time.Millisecond
	c.StartTimeout = 20 * time.Second
	c.InitTimeout = 20 * time.Second
	c.LostAfter = 5 * time.Second
	return c
}

// script writes an executable shell script and uploads it to agent nd.
func script(t *testing.T, nd *node.Node, body string) proto.FileRef {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prog.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h, size, err := nd.Blobs().PutFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return proto.FileRef{Name: "prog.sh", Hash: h.String(), Size: size}
}

// run submits a job through agent 0 and collects its updates until it ends.
func run(t *testing.T, nd *node.Node, d job.Description, prog proto.FileRef) (job.Record, []job.Update) {
	t.Helper()
	d.SetDefaults()
	id, err := nd.Submitter().Submit(submitter.Submission{Desc: d, Program: prog})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var ups []job.Update
	var end job.Record
	err = nd.Submitter().Watch(ctx, id, 0, func(u job.Update) error {
		mu.Lock()
		defer mu.Unlock()
		ups = append(ups, u)
		if u.Kind == "end" {
			end = *u.Record
		}
		return nil
	})
	if err != nil {
		t.Fatalf("watch %s: %v", id, err)
	}
	return end, ups
}

func outputLines(ups []job.Update) []string {
	var out []string
	for _, u := range ups {
		if u.Kind == "output" && u.Rank >= 0 {
			out = append(out, fmt.Sprintf("%d:%s", u.Rank, u.Line))
		}
	}
	sort.Strings(out)
	return out
}

func TestJobRunsEveryRankOnce(t *testing.T) {
	net := jobNet(t, 4, 2)
	prog := script(t, net.Nodes[0], `echo "rank $ZORILLA_RANK of $ZORILLA_SIZE"`)
	for _, s := range []job.Strategy{job.Concentrate, job.Spread} {
		t.Run(string(s), func(t *testing.T) {
			d := job.NewDescription("prog.sh", nil, 6)
			d.Strategy = s
			rec, ups := run(t, net.Nodes[0], d, prog)
			if rec.State != job.Done || rec.Exit != 0 {
				t.Fatalf("job ended %s (exit %d): %s", rec.State, rec.Exit, rec.Reason)
			}
			var want []string
			for r := range 6 {
				want = append(want, fmt.Sprintf("%d:rank %d of 6", r, r))
			}
			sort.Strings(want)
			if got := outputLines(ups); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("output\n got %v\nwant %v", got, want)
			}
		})
	}
}

func TestJobFailingRankFailsTheJob(t *testing.T) {
	net := jobNet(t, 3, 2)
	prog := script(t, net.Nodes[0], `if [ "$ZORILLA_RANK" = 2 ]; then exit 7; fi; sleep 30`)
	rec, _ := run(t, net.Nodes[0], job.NewDescription("prog.sh", nil, 4), prog)
	if rec.State != job.Failed || rec.Exit != 7 || !strings.Contains(rec.Reason, "rank 2") {
		t.Fatalf("job ended %s exit %d (%s), want failed with exit 7 naming rank 2", rec.State, rec.Exit, rec.Reason)
	}
}

var _ = blob.Hash{}

// The NAS IS kernel sorts across 4 ranks on 3 agents, talking through the
// agents' MPI routers, and verifies its sort.
func TestJobMPIIntegerSort(t *testing.T) {
	net := jobNet(t, 3, 2)
	prog := buildExample(t, net.Nodes[0], "is")
	d := job.NewDescription("is", []string{"S"}, 4)
	d.Strategy = job.Spread
	rec, ups := run(t, net.Nodes[0], d, prog)
	var text []string
	for _, u := range ups {
		if u.Kind == "output" {
			text = append(text, fmt.Sprintf("[%d] %s", u.Rank, u.Line))
		}
	}
	if rec.State != job.Done {
		t.Fatalf("job ended %s: %s\n%s", rec.State, rec.Reason, strings.Join(text, "\n"))
	}
	if !strings.Contains(strings.Join(text, "\n"), "SUCCESSFUL") {
		t.Fatalf("no successful verification in output:\n%s", strings.Join(text, "\n"))
	}
}
