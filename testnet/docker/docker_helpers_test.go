package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
)

// needDocker skips the test unless a docker engine answers and the host
// has what the testnet runs from it (root, nsenter, iptables or tc).
func needDocker(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped in -short: brings up a dozen containers for a few minutes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := checkTools(ctx, dockerCLI{"docker"}, "nsenter", "unshare", "ip"); err != nil {
		t.Skipf("skipped: no docker testnet here: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("skipped: the testnet enters containers' network namespaces, which needs root")
	}
	if _, err := chooseShaper(ctx, shaperForTest(), Layout{Sites: []Site{{}, {}}}, 0, false); err != nil {
		t.Skipf("skipped: no way to put latency between containers: %v", err)
	}
}

// shaperForTest is the shaper the docker tests ask for: auto, or
// ZORILLA_TESTNET_SHAPER (netem, transport, nfqueue) to try one.
func shaperForTest() string {
	if s := os.Getenv("ZORILLA_TESTNET_SHAPER"); s != "" {
		return s
	}
	return ShaperAuto
}

// testImage is the agent image of this test process, built by the first
// test that asks (testImageBuild): its tag names the process, since a tag
// shared by test runs (or engineers) on one engine can be rebuilt from
// other sources between a test's build and its containers' start.
// TestMain removes it, and the untagged images builds left, once every
// test's testnet is down.
var testImage struct {
	mu    sync.Mutex
	tag   string
	bin   string // the binaries for the host: zorilla, examples/NAME
	err   error
	built bool
}

// testImageBuild builds the image from this module, once per test process,
// and returns its tag and the folder of the binaries for the host (zorilla
// submit and the examples).
func testImageBuild(t *testing.T, ctx context.Context) (tag, bin string) {
	t.Helper()
	testImage.mu.Lock()
	defer testImage.mu.Unlock()
	if !testImage.built {
		testImage.built = true
		testImage.tag = fmt.Sprintf("zorilla-testnet:test-%d", os.Getpid())
		start := time.Now()
		testImage.err = buildTestImage(ctx)
		if testImage.err == nil {
			t.Logf("image %s built in %v", testImage.tag, time.Since(start).Round(time.Millisecond))
		}
	}
	if testImage.err != nil {
		t.Fatal(testImage.err)
	}
	return testImage.tag, testImage.bin
}

func buildTestImage(ctx context.Context) error {
	src, err := filepath.Abs("../..")
	if err != nil {
		return err
	}
	if testImage.bin, err = os.MkdirTemp("", "zorilla-image"); err != nil {
		return err
	}
	return BuildImage(ctx, ImageSpec{Tag: testImage.tag, Source: src, Examples: []string{"hostname", "stencil"}, BinDir: testImage.bin})
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testImage.built {
		msg, err := removeTestImage(testImage.tag)
		if err != nil {
			msg, code = err.Error(), max(code, 1)
		}
		fmt.Fprintln(os.Stderr, msg)
		os.RemoveAll(testImage.bin)
	}
	os.Exit(code)
}

// removeTestImage removes an image tag of the tests and the untagged agent
// images, and says what it did. A tag still in use is only reported:
// another run of the docker tests on this machine may be using it.
func removeTestImage(tag string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	removed, err := RemoveImages(ctx, "docker", tag)
	switch {
	case errors.Is(err, ErrImageInUse):
		return fmt.Sprintf("image %s kept: %v", tag, err), nil
	case err != nil:
		return "", fmt.Errorf("remove the tests' images: %w", err)
	default:
		return "removed images " + strings.Join(removed, " "), nil
	}
}

// siteRTTs gathers the RTTs the agents measured to their neighbours, as
// their control APIs report them: [from site][to site] -> samples.
func siteRTTs(ctx context.Context, tn *Testnet) ([][][]time.Duration, error) {
	cs := tn.Containers()
	siteOf := map[peer.ID]int{}
	for _, c := range cs {
		siteOf[c.PeerID] = c.Site
	}
	k := len(tn.State().Layout.Sites)
	out := make([][][]time.Duration, k)
	for i := range out {
		out[i] = make([][]time.Duration, k)
	}
	for _, c := range cs {
		cl, err := node.Dial(c.DataDir)
		if err != nil {
			continue // killed or not up: its view is not needed
		}
		p, err := cl.Peers(ctx)
		cl.Close()
		if err != nil {
			continue
		}
		for _, n := range p.Neighbours {
			if s, ok := siteOf[n.ID]; ok && n.Measured {
				out[c.Site][s] = append(out[c.Site][s], n.RTT)
			}
		}
	}
	return out, nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// rankedLikeLayout checks that, seen from every site, the median measured
// RTT to each site ranks as the layout's RTTs do (where they differ by at
// least 4 ms), that each median is at least 80% of what the layout puts
// there, and that enough pairs were compared. It returns the medians.
func rankedLikeLayout(l Layout, local time.Duration, rtts [][][]time.Duration) (string, error) {
	var b strings.Builder
	compared := 0
	for s := range l.Sites {
		for t := range l.Sites {
			if len(rtts[s][t]) == 0 {
				continue
			}
			m, want := median(rtts[s][t]), l.RTT(s, t, local)
			fmt.Fprintf(&b, "%s->%s: median %v of %d (layout %v)\n", l.Sites[s].Name, l.Sites[t].Name, m.Round(10*time.Microsecond), len(rtts[s][t]), want)
			if m < want*8/10 {
				return b.String(), fmt.Errorf("%s->%s: median RTT %v, below the %v the layout puts there", l.Sites[s].Name, l.Sites[t].Name, m, want)
			}
			for u := range l.Sites {
				if len(rtts[s][u]) == 0 || l.RTT(s, u, local)-want < 4*time.Millisecond {
					continue
				}
				compared++
				if mu := median(rtts[s][u]); mu <= m {
					return b.String(), fmt.Errorf("from %s: %s (%v) is not farther than %s (%v)", l.Sites[s].Name, l.Sites[u].Name, mu, l.Sites[t].Name, m)
				}
			}
		}
	}
	if compared < len(l.Sites) {
		return b.String(), fmt.Errorf("only %d site pairs compared yet", compared)
	}
	return b.String(), nil
}

// runSubmit runs `zorilla submit` from the host against an agent's data
// dir, and returns its stdout.
func runSubmit(ctx context.Context, bin, dataDir string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "zorilla"), append([]string{"submit", "--data-dir", dataDir}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// checkHostnameOutput checks one "[r] rank r of n on HOST ..." line per
// rank and returns the hosts the ranks ran on.
func checkHostnameOutput(t *testing.T, out string, n int) map[string]int {
	t.Helper()
	hosts := map[string]int{}
	seen := map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var tag, rank, size int
		var host string
		if _, err := fmt.Sscanf(line, "[%d] rank %d of %d on %s", &tag, &rank, &size, &host); err != nil || tag != rank || size != n || seen[rank] {
			t.Fatalf("line %q of\n%s", line, out)
		}
		seen[rank] = true
		hosts[host]++
	}
	if len(seen) != n {
		t.Fatalf("%d ranks answered, want %d:\n%s", len(seen), n, out)
	}
	return hosts
}

// submitAPI uploads prog to the agent of dataDir and submits it on n
// ranks placed with strategy s, through the Go client of the control API.
func submitAPI(ctx context.Context, dataDir, prog string, n int, s job.Strategy) (job.ID, error) {
	cl, err := node.Dial(dataDir)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	b, err := cl.Upload(ctx, prog)
	if err != nil {
		return "", err
	}
	d := job.NewDescription(prog, nil, n)
	d.Strategy = s
	return cl.Submit(ctx, node.SubmitRequest{Description: d, Program: proto.FileRef{Name: filepath.Base(prog), Hash: b.Hash, Size: b.Size}})
}

// awaitJob polls the job's record until it is final.
func awaitJob(ctx context.Context, dataDir string, id job.ID) (job.Record, error) {
	cl, err := node.Dial(dataDir)
	if err != nil {
		return job.Record{}, err
	}
	defer cl.Close()
	for {
		r, err := cl.Job(ctx, id)
		if err == nil && r.State.Terminal() {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return r, fmt.Errorf("job %s still %s: %w", id, r.State, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// upConverged brings up a testnet of cfg laid out as sites, downs it when
// the test ends, and waits until every agent has at least neighbours
// neighbours.
func upConverged(t *testing.T, ctx context.Context, cfg Config, sites string, neighbours int) *Testnet {
	t.Helper()
	layout, err := ParseSitesString(sites)
	if err != nil {
		t.Fatal(err)
	}
	tn, err := Up(ctx, cfg, layout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = Down(context.Background(), cfg, false) })
	awaitCtx, stop := context.WithTimeout(ctx, 2*time.Minute)
	defer stop()
	if err := tn.Await(awaitCtx, "neighbours", time.Second, Converged(neighbours)); err != nil {
		t.Fatal(err)
	}
	return tn
}
