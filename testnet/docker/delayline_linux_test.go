package docker

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// scratchNetns makes a network namespace that lives as long as the test:
// a goroutine unshares on a locked thread and parks there. It returns the
// namespace's path and a function that runs f with that thread, so
// sockets f creates belong to the namespace.
func scratchNetns(t *testing.T) (string, func(f func())) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: creating a network namespace needs root")
	}
	for _, tool := range []string{"nsenter", "iptables", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: %s is missing (apt-get install util-linux iptables iproute2)", tool)
		}
	}
	jobs := make(chan func())
	ready := make(chan error, 1)
	var path string
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ready <- err
			return
		}
		path = fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
		ready <- nil
		for f := range jobs {
			f()
		}
	}()
	if err := <-ready; err != nil {
		t.Skipf("skipped: cannot unshare a network namespace: %v", err)
	}
	t.Cleanup(func() { close(jobs) })
	in := func(f func()) {
		done := make(chan struct{})
		jobs <- func() { f(); close(done) }
		<-done
	}
	nsenter(t, path, "ip", "link", "set", "lo", "up")
	return path, in
}

func nsenter(t *testing.T, netns string, args ...string) {
	t.Helper()
	out, err := exec.Command("nsenter", append([]string{"--net=" + netns}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter %v: %v: %s", args, err, out)
	}
}

// echoRTT measures the best of a few round trips over one TCP connection
// to an echo server on 127.0.0.2, inside the namespace.
func echoRTT(t *testing.T, in func(func())) time.Duration {
	t.Helper()
	var ln net.Listener
	var conn net.Conn
	var err error
	in(func() {
		if ln, err = net.Listen("tcp", "127.0.0.2:0"); err == nil {
			conn, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	defer conn.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(c, c)
			c.Close()
		}
	}()
	best := time.Hour
	buf := make([]byte, 1)
	for range 5 {
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		if _, err := conn.Write([]byte{'x'}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(conn, buf); err != nil {
			t.Fatal(err)
		}
		best = min(best, time.Since(start))
	}
	return best
}

// TestDelayLine checks the delay line on its own: packets to 127.0.0.2
// go through queue 7 and come out 15 ms later, only while the line runs;
// the rule's --queue-bypass lets them through undelayed when it does not.
func TestDelayLine(t *testing.T) {
	netns, in := scratchNetns(t)
	cmds := iptablesCommands([]Rule{{Dst: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}, Queue: 7, Delay: 15 * time.Millisecond}})
	for _, c := range cmds {
		nsenter(t, netns, c...)
	}
	if rtt := echoRTT(t, in); rtt > 5*time.Millisecond {
		t.Fatalf("RTT %v without a delay line, want the bypass to pass packets at once", rtt)
	}
	line, err := startDelayLine(netns, []QueueDelay{{Num: 7, Delay: 15 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	rtt := echoRTT(t, in)
	passed, overflow, errs := line.Stats()
	if err := line.Close(); err != nil {
		t.Fatal(err)
	}
	_ = line.Close() // idempotent
	// The echo's answer goes to 127.0.0.1, undelayed: one 15 ms leg.
	if rtt < 15*time.Millisecond || rtt > 40*time.Millisecond {
		t.Fatalf("RTT %v through a 15ms delay line, want 15ms to 40ms", rtt)
	}
	if passed == 0 || overflow != 0 || errs != 0 {
		t.Fatalf("passed %d, overflow %d, refused %d: want packets delayed, none passed at once or refused", passed, overflow, errs)
	}
	if rtt := echoRTT(t, in); rtt > 5*time.Millisecond {
		t.Fatalf("RTT %v after the line closed, want the bypass again", rtt)
	}
}
