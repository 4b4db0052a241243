package main

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// An agent whose only bootstrap peer cannot be reached says so on stderr,
// once, at the default log level, and keeps trying. The "peer" is a TCP
// listener that hangs up on every connection, counting them.
func TestAgentSaysBootstrapUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var dials atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dials.Add(1)
			c.Close()
		}
	}()
	boot := "/ip4/127.0.0.1/tcp/" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + "/p2p/12D3KooWLRPJAA5o6Cj9GDcC5AjByEEKjy1k3ZXgtU3K4E3vTnBR"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errw syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"zorilla", "agent", "--data-dir", shortDataDir(t), "--listen", "/ip4/127.0.0.1/tcp/0",
			"--mdns=false", "--bootstrap", boot}, &out, &errw)
	}()
	const line = "zorilla agent: no bootstrap peer can be reached ("
	waitFor(t, 30*time.Second, "the agent says its bootstrap peer is unreachable", func() bool { return strings.Contains(errw.String(), line) })
	// Its retries (after 1s, 2s, 4s..., within libp2p's dial backoff) fail
	// alike and say nothing more.
	waitFor(t, 60*time.Second, "the agent tried again", func() bool { return dials.Load() >= 2 })
	cancel()
	select {
	case code := <-done:
		lines := strings.Split(strings.TrimSpace(errw.String()), "\n")
		if code != 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], line) || !strings.HasSuffix(lines[0], "); retrying with backoff up to 1m0s") {
			t.Errorf("exit %d, stderr:\n%s\nwant exit 0 and the one line %q...", code, errw.String(), line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not stop")
	}
}

// An agent told to listen on a TCP port another agent holds refuses to
// start (exit 2, one line that says what to do), unless --reuse-port.
func TestAgentRefusesPortInUse(t *testing.T) {
	first := runAgentInProcess(t, shortDataDir(t))
	var port string
	for _, a := range first.Addrs {
		if f := strings.Split(a, "/"); len(f) > 4 && f[1] == "ip4" && f[3] == "tcp" {
			port = f[4]
		}
	}
	if port == "" {
		t.Fatalf("the first agent has no TCP address: %v", first.Addrs)
	}
	listen := "/ip4/127.0.0.1/tcp/" + port
	// Bounded: an agent that does start runs until its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errw syncBuffer
	code := runContext(ctx, []string{"zorilla", "agent", "--data-dir", shortDataDir(t), "--mdns=false", "--listen", listen}, &out, &errw)
	r := result{code, out.String(), errw.String()}
	want := "zorilla: node: listen on 127.0.0.1:" + port + ": tcp port " + port + " is already in use by another listener (another agent?); " +
		"give --listen another port, or --reuse-port to share it\n"
	if r.code != 2 || r.stderr != want || r.stdout != "" {
		t.Fatalf("second agent on port %s: %v\nwant exit 2 and %q", port, r, want)
	}
	second := runAgentInProcess(t, shortDataDir(t), "--listen", listen, "--reuse-port")
	if !strings.Contains(strings.Join(second.Addrs, " "), listen+"/p2p/") {
		t.Errorf("with --reuse-port the agent listens on %v, want %s too", second.Addrs, listen)
	}
}
