package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/overlay"
)

// agents starts n in-process agents on loopback, each with a data dir (so
// a control socket) and procs slots, fast timeouts, open to any
// submitter, and waits until each has a neighbour. The data dirs are short
// temporary paths: a unix socket path must stay under 108 bytes. Tests
// that run more ranks than agents use -a concentrate: spread waits for one
// offer per process, so on a small network it floods to the last radius.
func agents(t *testing.T, n, procs int) []*node.Node {
	t.Helper()
	return agentsWith(t, n, procs, nil)
}

// agentsWith is agents with agent i's config adjusted by configure first.
func agentsWith(t *testing.T, n, procs int, configure func(i int, cfg *node.Config)) []*node.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var nodes []*node.Node
	for i := range n {
		dir, err := os.MkdirTemp("", "z")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		cfg := fastAgent(dir, procs)
		if configure != nil {
			configure(i, &cfg)
		}
		if i > 0 {
			for _, a := range nodes[0].Addrs() {
				cfg.Bootstrap = append(cfg.Bootstrap, a.String())
			}
		}
		nd, err := node.New(ctx, cfg)
		if err != nil {
			t.Fatalf("agent %d: %v", i, err)
		}
		t.Cleanup(func() { _ = nd.Close() })
		nodes = append(nodes, nd)
	}
	waitFor(t, 20*time.Second, "every agent has a neighbour", func() bool {
		for _, nd := range nodes {
			if n > 1 && len(nd.Overlay().Neighbours()) == 0 {
				return false
			}
		}
		return true
	})
	return nodes
}

// fastAgent is an agent config for tests: loopback, short job timeouts.
func fastAgent(dir string, procs int) node.Config {
	cfg := node.DefaultConfig()
	cfg.DataDir = dir
	cfg.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.Open = true
	cfg.Cores, cfg.MaxProcs, cfg.MaxJobs = procs, procs, 2
	cfg.Overlay = overlay.FastConfig()
	cfg.ShutdownTimeout = time.Second
	s := submitter.DefaultConfig()
	s.Schedule.First = 100 * time.Millisecond
	s.OfferGrace = 100 * time.Millisecond
	s.StartTimeout, s.InitTimeout, s.LostAfter = 20*time.Second, 20*time.Second, 5*time.Second
	cfg.Services.Submitter = s
	cfg.Services.Flood.Rate, cfg.Services.Flood.Burst = 1000, 1000
	return cfg
}

// waitFor polls cond every 20 ms until it holds, or fails the test.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	waitForSaying(t, limit, what, cond, func() string { return "" })
}

// waitForSaying is waitFor that, on a timeout, also prints what detail
// says of the state it waited in.
func waitForSaying(t *testing.T, limit time.Duration, what string, cond func() bool, detail func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s\n%s", limit, what, detail())
		}
		<-tick.C
	}
}

// syncBuffer is a bytes.Buffer that a command writes while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// result is what one in-process run of the zorilla command gave.
type result struct {
	code           int
	stdout, stderr string
}

// zorilla runs the command line in-process, as main does.
func zorilla(args ...string) result {
	var out, errw syncBuffer
	code := run(append([]string{"zorilla"}, args...), &out, &errw)
	return result{code, out.String(), errw.String()}
}

func (r result) String() string {
	return "exit " + strconv.Itoa(r.code) + "\n--- stdout\n" + r.stdout + "--- stderr\n" + r.stderr
}

// script writes an executable shell script into a temporary folder.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prog.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
