package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/zorilla-p2p/zorilla/testnet/localnet"
)

// TestWebBench measures the web view on a local network of agent
// processes (32 unless ZORILLA_WEB_BENCH_AGENTS says): the network page's
// load time in headless Chromium, agent 0's CPU and memory over a window
// with the page open (it refreshes every 5 s) against windows before and
// after without it, and the time of a /metrics scrape. Opt-in
// (ZORILLA_WEB_BENCH=1): about two minutes, and it needs Chromium. The
// table goes to the test log; BENCHMARKS.md has the figures.
func TestWebBench(t *testing.T) {
	if os.Getenv("ZORILLA_WEB_BENCH") == "" {
		t.Skip("opt-in: ZORILLA_WEB_BENCH=1 starts 32 agents and a browser for about two minutes")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium)")
	}
	count, window := 32, 30*time.Second
	if v, err := strconv.Atoi(os.Getenv("ZORILLA_WEB_BENCH_AGENTS")); err == nil && v > 1 {
		count = v
	}
	net, err := localnet.New("webbench", io.Discard, zorillaBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close(false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := net.Up(ctx, count, 1); err != nil {
		t.Fatal(err)
	}
	a0 := net.Agents()[0]
	url, pid := a0.ID.Web, a0.Process().Pid
	var nodes int
	waitFor(t, 90*time.Second, "agent 0's graph to stop growing", func() bool {
		var g struct{ Nodes []json.RawMessage }
		if err := getJSONInto(url+"api/graph", &g); err != nil {
			return false
		}
		grown := len(g.Nodes) > nodes
		nodes = len(g.Nodes)
		return !grown && nodes >= min(count, 8)
	})

	idle1 := usage(t, pid, window)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	var loads []time.Duration
	for i := range 6 {
		t0 := time.Now()
		if _, err := chromedp.Run(bctx, chromedp.Navigate(url+"?"+strconv.Itoa(i)+"#/network")); err != nil {
			t.Fatal(err)
		}
		js := fmt.Sprintf(`document.querySelectorAll('#graph g.node').length >= %d`, nodes)
		for {
			if ok, err := chromedp.Run(bctx, chromedp.Evaluate[bool](js)); err == nil && ok {
				break
			}
			if time.Since(t0) > 30*time.Second {
				t.Fatalf("the network page did not show %d agents in 30 s", nodes)
			}
			time.Sleep(5 * time.Millisecond) // the page's own pace: poll it finely
		}
		if i > 0 { // the first load starts the browser's caches
			loads = append(loads, time.Since(t0))
		}
	}
	open := usage(t, pid, window) // the page stays open, refreshing
	if _, err := chromedp.Run(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	idle2 := usage(t, pid, window)

	var scrapes []time.Duration
	for range 200 {
		t0 := time.Now()
		resp, err := http.Get(url + "metrics")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		scrapes = append(scrapes, time.Since(t0))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "web view of agent 0 of %d agent processes on loopback (graph: %d agents)\n", count, nodes)
	fmt.Fprintf(&b, "%-34s %10s %10s\n", "", "median", "p90")
	fmt.Fprintf(&b, "%-34s %10v %10v\n", "network page load (5 loads)", pct(loads, 50), pct(loads, 90))
	fmt.Fprintf(&b, "%-34s %10v %10v\n", "/metrics scrape (200)", pct(scrapes, 50), pct(scrapes, 90))
	fmt.Fprintf(&b, "%-34s %10s %10s\n", fmt.Sprintf("agent 0 over %v", window), "CPU", "RSS")
	for _, u := range []struct {
		name string
		u    procUsage
	}{{"without the view (before)", idle1}, {"with the network page open", open}, {"without the view (after)", idle2}} {
		fmt.Fprintf(&b, "%-34s %9.2f%% %7.1f MB\n", u.name, u.u.cpu*100, float64(u.u.rss)/(1<<20))
	}
	t.Log("\n" + b.String())
}

func getJSONInto(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// procUsage is a process's CPU share (of one core) over a window and its
// resident memory at the end.
type procUsage struct {
	cpu float64
	rss int64
}

// usage measures pid over window, from /proc.
func usage(t *testing.T, pid int, window time.Duration) procUsage {
	t.Helper()
	t0, c0 := time.Now(), cpuTicks(t, pid)
	time.Sleep(window) // the measurement window itself, not a wait for a condition
	c1, el := cpuTicks(t, pid), time.Since(t0)
	return procUsage{cpu: float64(c1-c0) / 100 / el.Seconds(), rss: rssBytes(t, pid)}
}

// cpuTicks is utime+stime of pid in clock ticks (USER_HZ, 100 on Linux).
func cpuTicks(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

func rssBytes(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)].Round(100 * time.Microsecond)
}
