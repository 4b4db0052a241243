package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBenchEndToEnd builds the zorilla binary and runs `zorilla bench
// pingpong` as a user does: two agent processes, examples/pingpong on a
// rank on each, the raw libp2p stream to an echo process, the relay chain
// and the shm relay chain (each an echo and two relay processes), a table with
// figures; then Ctrl-C during the rounds, which prints the rounds done and
// still stops every process.
func TestBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts agent processes")
	}
	bin := zorillaBinary(t)
	num := `\d+\.\d\d`
	t.Run("one round", func(t *testing.T) {
		start := time.Now()
		r, dir := demoBinary(t, bin, nil, "bench", "pingpong", "--rounds", "1", "--sizes", "8,65536")
		if r.code != 0 {
			t.Fatalf("bench: %v", r)
		}
		for _, want := range []string{
			`(?m)^\s+8 B  zorilla\s+` + num + `\s+` + num + `\s+-\s+-$`,
			`(?m)^\s+8 B  raw libp2p\s+` + num + `\s+` + num + `\s+` + num + `x\s+` + num + `x$`,
			`(?m)^\s+64 KiB  zorilla\s+` + num + `\s+` + num + `\s+-\s+-$`,
			`(?m)^\s+64 KiB  raw libp2p\s+` + num + `\s+` + num + `\s+` + num + `x\s+` + num + `x$`,
			`(?m)^\s+8 B  relay chain\s+` + num + `\s+` + num + `\s+` + num + `x\s+` + num + `x$`,
			`(?m)^\s+64 KiB  relay chain\s+` + num + `\s+` + num + `\s+` + num + `x\s+` + num + `x$`,
			`(?m)^\s+8 B  shm relay chain\s+` + num + `\s+` + num + `\s+` + num + `x\s+` + num + `x$`,
			`(?m)^\s+64 KiB  shm relay chain\s+` + num + `\s+` + num + `\s+` + num + `x\s+` + num + `x$`,
		} {
			if !regexp.MustCompile(want).MatchString(r.stdout) {
				t.Errorf("the table has no line matching %s:\n%v", want, r)
			}
		}
		if !strings.Contains(r.stderr, "raw libp2p stream to an echo process over tcp, /tls/1.0.0, /yamux/1.0.0") {
			t.Errorf("the raw stream is not the agents' kind (TCP, TLS, yamux):\n%v", r)
		}
		if !strings.Contains(r.stderr, "relay chain: this process -> unix socket -> relay -> tcp, /tls/1.0.0, /yamux/1.0.0 -> relay") {
			t.Errorf("the relay chain's relays are not joined as the agents are (TCP, TLS, yamux):\n%v", r)
		}
		if !strings.Contains(r.stderr, "shm relay chain: this process -> shared-memory rings -> relay -> tcp, /tls/1.0.0, /yamux/1.0.0 -> relay") {
			t.Errorf("the shm relay chain's relays are not joined as the agents are (TCP, TLS, yamux):\n%v", r)
		}
		t.Logf("bench took %v", time.Since(start))
		assertGone(t, dir)
		assertNoEcho(t, bin)
	})
	t.Run("ctrl-c", func(t *testing.T) {
		interrupt := func(_, stderr *syncBuffer, p *os.Process) {
			waitFor(t, 60*time.Second, "a round is done", func() bool { return strings.Contains(stderr.String(), "round 1/50:") })
			_ = p.Signal(syscall.SIGINT)
		}
		r, dir := demoBinary(t, bin, interrupt, "bench", "pingpong", "--rounds", "50", "--sizes", "8,65536")
		if r.code != exitInterrupted || !strings.Contains(r.stderr, "bench interrupted") ||
			!regexp.MustCompile(`medians of \d+ rounds?;`).MatchString(r.stdout) {
			t.Fatalf("bench after Ctrl-C: want exit 130 and the table of the rounds done, got %v", r)
		}
		assertGone(t, dir)
		assertNoEcho(t, bin)
	})
}

// assertNoEcho checks that no `bench echo` or `bench relay` child of bin
// still runs.
func assertNoEcho(t *testing.T, bin string) {
	t.Helper()
	for p, cmdline := range processes() {
		for _, child := range []string{"echo", "relay"} {
			if bytes.HasPrefix(cmdline, []byte(bin+"\x00bench\x00"+child)) {
				t.Errorf("a bench %s process still runs: %s", child, p)
			}
		}
	}
}
