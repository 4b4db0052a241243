package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/testnet/localnet"
)

// TestCheckpointKillAgent is the checkpoint kill test on agent processes: a
// job of 3 ranks of examples/heat (a checkpoint at every step) loses the
// agent of a random rank to SIGKILL at a random point (seeded), restarts
// from its last complete checkpoint (or from scratch, saying so, when it
// had none), and prints exactly the checksum of a run that lost nothing.
// ZORILLA_CKPT_TRIALS sets the number of kills (20 for the figure in
// BENCHMARKS.md; 2 by default). After each, a fresh agent joins so the pool keeps five.
func TestCheckpointKillAgent(t *testing.T) {
	trials := 2
	if v := os.Getenv("ZORILLA_CKPT_TRIALS"); v != "" {
		var err error
		if trials, err = strconv.Atoi(v); err != nil || trials < 1 {
			t.Fatalf("ZORILLA_CKPT_TRIALS=%q: a number from 1", v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(2+trials)*time.Minute)
	defer cancel()
	n, _, _ := stencilNet(t, ctx)
	heat := exampleBinary(t, "heat")
	args := []string{"zorilla", "submit", "--data-dir", n.Agents()[0].Dir, "-n", "3", "-a", "spread", "--retries", "3", heat, "40", "60", "3000"}
	okLine := regexp.MustCompile(`(?m)^\[0\] heat OK ([0-9a-f]{16})$`)

	var out, errw syncBuffer
	if c := run(args, &out, &errw); c != 0 || okLine.FindStringSubmatch(out.String()) == nil {
		t.Fatalf("uninterrupted run: exit %d\n%s\n%s", c, out.String(), errw.String())
	}
	ref := okLine.FindStringSubmatch(out.String())[1]
	boot := localnet.LoopbackAddr(n.Agents()[0].ID.Addrs)
	for trial := range trials {
		rng := rand.New(rand.NewPCG(16, uint64(trial)))
		var out, errw syncBuffer
		code := make(chan int, 1)
		go func() { code <- run(args, &out, &errw) }()
		waitFor(t, time.Minute, "three heat ranks running", func() bool { return len(programCopies(t, n, "heat")) == 3 })
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond) // the random point of the kill
		var hosts []int
		for _, c := range programCopies(t, n, "heat") {
			if c.agent > 0 && !slices.Contains(hosts, c.agent) {
				hosts = append(hosts, c.agent)
			}
		}
		if len(hosts) == 0 {
			t.Fatalf("trial %d: no heat rank runs outside agent 0 (the job ended already?)\n%s", trial, out.String())
		}
		victim := hosts[rng.IntN(len(hosts))]
		if err := n.Agents()[victim].Process().Kill(); err != nil {
			t.Fatal(err)
		}
		var c int
		select {
		case c = <-code:
		case <-ctx.Done():
			t.Fatalf("trial %d: job still running\n%s\n%s", trial, out.String(), errw.String())
		}
		m := okLine.FindStringSubmatch(out.String())
		if c != 0 || m == nil || m[1] != ref {
			t.Fatalf("trial %d: exit %d, want the checksum %s\n--- stdout\n%s--- stderr\n%s", trial, c, ref, out.String(), errw.String())
		}
		from := regexp.MustCompile(`starting the job again on other hosts in \S+ \(retry 1 of 3\), (from checkpoint (\d+)|from scratch)`).FindStringSubmatch(errw.String())
		if from == nil {
			t.Fatalf("trial %d: no restart notice\n%s", trial, errw.String())
		}
		restarted := strings.Contains(out.String(), "heat: restarted at step ")
		if (from[2] != "") != restarted {
			t.Fatalf("trial %d: the notice says %q, the program restarted: %v\n%s", trial, from[1], restarted, out.String())
		}
		t.Logf("trial %d: agent %d killed; %s", trial, victim, from[1])
		waitFor(t, 30*time.Second, "no heat process left", func() bool { return len(programCopies(t, n, "heat")) == 0 })
		a, err := n.Spawn(2, boot)
		if err == nil {
			err = a.Await(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// programCopies is stencilCopies for a program of any name.
func programCopies(t *testing.T, n *localnet.Net, name string) []stencilCopy {
	t.Helper()
	var out []stencilCopy
	for f, cmdline := range processes() {
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		if filepath.Base(string(argv0)) != name {
			continue
		}
		c := stencilCopy{agent: -1}
		for a, ag := range n.Agents() {
			if bytes.HasPrefix(argv0, []byte(agentJobsDir(ag)+"/")) {
				c.agent = a
			}
		}
		if c.agent < 0 {
			continue
		}
		c.pid, _ = strconv.Atoi(strings.Split(f, "/")[2])
		out = append(out, c)
	}
	return out
}
