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

// imageTag is a tag for the image of one test, its own: a tag shared by
// tests (or engineers) on one engine can be rebuilt from other sources
// between a test's build and its containers' start. The image goes when
// the test ends.
func imageTag(t *testing.T) string {
	tag := fmt.Sprintf("zorilla-testnet:test-%d-%s", os.Getpid(), strings.ToLower(strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())))
	if len(tag) > 128 {
		tag = tag[:128]
	}
	t.Cleanup(func() { _, _ = dockerCLI{"docker"}.run(context.Background(), "image", "rm", "-f", tag) })
	return tag
}

// buildForTest builds the image from this module and keeps the binaries
// for the host (zorilla submit and the hostname example). The image, and
// the untagged ones builds left, are removed when the test ends (after its
// testnet is down: cleanups run last registered first).
func buildForTest(t *testing.T, ctx context.Context, tag string) string {
	t.Helper()
	t.Cleanup(func() { removeTestImage(t, tag) })
	bin := t.TempDir()
	src, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := BuildImage(ctx, ImageSpec{Tag: tag, Source: src, Examples: []string{"hostname", "stencil"}, BinDir: bin}); err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s built in %v", tag, time.Since(start).Round(time.Millisecond))
	return bin
}

// removeTestImage removes a test's image tag and the untagged agent
// images. A tag still in use is only logged: another run of the docker
// tests on this machine may be using it.
func removeTestImage(t *testing.T, tag string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	removed, err := RemoveImages(ctx, "docker", tag)
	switch {
	case errors.Is(err, ErrImageInUse):
		t.Logf("image %s kept: %v", tag, err)
	case err != nil:
		t.Errorf("remove the test's images: %v", err)
	default:
		t.Logf("removed images %s", strings.Join(removed, " "))
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
