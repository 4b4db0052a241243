package docker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// MPICH programs under `zorilla submit
// --pmi` on 4 agent containers on two sites (agents run with
// --job-network host: MPICH's ranks connect to each other over the
// containers' networks). The image is FROM scratch, so the test copies the
// programs' shared libraries (MPICH, UCX and its transport modules, hwloc,
// libc and the loader) into each container first, as an owner would
// install MPICH.
//
// By default each job runs within one container (-a concentrate): the
// PMI server, the staged libraries and MPICH's shared memory in a
// container. The jobs across containers are opt-in (ZORILLA_DOCKER_PMI=1):
// Debian's MPICH 4.0.2 over UCX 1.13's TCP transport, which ranks in
// different containers must use, often hangs in MPI_Finalize. MPICH
// 4.0.2's UCX finalize closes every endpoint with a flush, waits for the
// flushes, and only then enters a PMI barrier. A TCP flush waits for the
// peer's acknowledgement, which the peer sends only while it progresses
// UCX; a peer whose own flushes completed first is blocked reading the
// PMI barrier's answer, with the flush request unread in its socket (seen
// with ss), so the rank never reaches the barrier. The hang is before that
// rank's barrier_in (and before any rank's PMI finalize), so the agent
// cannot tell it from a rank still computing and does not end it; nor
// can it answer that barrier early, since a rank let go exits and every
// rank later to MPI_Finalize then aborts (docs/DESIGN.md). MPICH 4.2.0
// calls the barrier before the flushes (pmodels/mpich 08d8105b7b,
// d6c7cd5b64). It is not the
// agents': mpiexec.mpich on one machine with UCX_TLS=tcp,self hangs the
// same way, and no UCX or MPICH setting of these versions avoids it
// (BENCHMARKS.md). Across containers about one job in four hangs so; the
// jobs that end pass. After a minute, the hosts
// of the waiting ranks say so in the job's output (pmi.Stalls).
func TestDockerPMI(t *testing.T) {
	needDocker(t)
	cc, err := exec.LookPath("mpicc.mpich")
	if err != nil {
		t.Skip("mpicc.mpich not found: install Debian's mpich and libmpich-dev")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	progs := t.TempDir()
	for _, name := range []string{"hello", "ring", "coll"} {
		src := filepath.Join("..", "..", "worker", "pmi", "testdata", name+".c")
		if b, err := exec.CommandContext(ctx, cc, "-O2", "-o", filepath.Join(progs, name), src).CombinedOutput(); err != nil {
			t.Fatalf("mpicc %s: %v\n%s", name, err, b)
		}
	}
	libs := stageLibs(t, ctx, filepath.Join(progs, "hello"))

	tag, bin := testImageBuild(t, ctx)
	dir, err := os.MkdirTemp("", "zp")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := DefaultConfig()
	cfg.Name, cfg.Dir, cfg.Image = fmt.Sprintf("zp%d", os.Getpid()%100000), filepath.Join(dir, "t"), tag
	cfg.Shaper = shaperForTest()
	cfg.AgentArgs = []string{"--job-network", "host"}
	tn := upConverged(t, ctx, cfg, "a 2 x 2; b 2 x 2 at 5 ms", 3)
	for _, c := range tn.Containers() {
		if b, err := exec.CommandContext(ctx, "docker", "cp", libs+"/.", c.Name+":/").CombinedOutput(); err != nil {
			t.Fatalf("docker cp the MPICH libraries into %s: %v\n%s", c.Name, err, b)
		}
	}
	first := tn.Containers()[0]
	submit := func(t *testing.T, prog string, n int, strategy string) string {
		t.Helper()
		start := time.Now()
		out, errOut, err := runSubmit(ctx, bin, first.DataDir, "--pmi", "-n", fmt.Sprint(n), "-a", strategy, filepath.Join(progs, prog))
		if err != nil {
			t.Fatalf("zorilla submit --pmi %s: %v\nstdout:\n%s\nstderr:\n%s", prog, err, out, errOut)
		}
		t.Logf("%s -n %d -a %s: %v", prog, n, strategy, time.Since(start).Round(time.Millisecond))
		return out
	}
	across := func(t *testing.T, hosts int) {
		t.Helper()
		if hosts > 1 && os.Getenv("ZORILLA_DOCKER_PMI") != "1" {
			t.Skip("across containers is opt-in: ZORILLA_DOCKER_PMI=1 (MPICH 4.0.2 over UCX/TCP often hangs in MPI_Finalize; see the test's comment)")
		}
	}
	hello := regexp.MustCompile(`^\[(\d+)\] hello rank (\d+) of (\d+) on (\S+) node-local (\d+)$`)
	for _, c := range []struct {
		n        int
		strategy string
		hosts    int
	}{{2, "concentrate", 1}, {4, "spread", 4}, {3, "spread", 3}} {
		t.Run(fmt.Sprintf("hello/%s/n=%d", c.strategy, c.n), func(t *testing.T) {
			across(t, c.hosts)
			out := submit(t, "hello", c.n, c.strategy)
			perHost := map[string]int{}
			local := map[string]string{}
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				m := hello.FindStringSubmatch(l)
				if m == nil || m[1] != m[2] || m[3] != fmt.Sprint(c.n) {
					t.Fatalf("line %q of\n%s", l, out)
				}
				perHost[m[4]]++
				local[m[4]] = m[5]
			}
			if len(perHost) != c.hosts {
				t.Fatalf("ranks on %d containers, want %d: %v", len(perHost), c.hosts, perHost)
			}
			for h, n := range perHost {
				if local[h] != fmt.Sprint(n) {
					t.Errorf("%s: %d ranks, MPICH counts %s on its node", h, n, local[h])
				}
			}
		})
	}
	for _, prog := range []string{"ring", "coll"} {
		for _, c := range []struct {
			n        int
			strategy string
			hosts    int
		}{{2, "concentrate", 1}, {4, "spread", 4}} {
			t.Run(fmt.Sprintf("%s/%s/n=%d", prog, c.strategy, c.n), func(t *testing.T) {
				across(t, c.hosts)
				out := submit(t, prog, c.n, c.strategy)
				want := 1 // ring: rank 0 checks the sum
				if prog == "coll" {
					want = c.n // coll: every rank checks what it received
				}
				ok := 0
				for _, l := range strings.Split(out, "\n") {
					if strings.HasSuffix(l, " ok") {
						ok++
					}
				}
				if strings.Contains(out, "WRONG") || ok != want {
					t.Fatalf("want %d lines ending ok:\n%s", want, out)
				}
			})
		}
	}
}

// stageLibs copies the shared libraries prog needs, and UCX's transport
// modules with theirs, into a folder laid out as the root of a container.
func stageLibs(t *testing.T, ctx context.Context, prog string) string {
	t.Helper()
	files := []string{prog}
	mods, _ := filepath.Glob("/usr/lib/x86_64-linux-gnu/ucx/*.so*")
	files = append(files, mods...)
	need := map[string]bool{}
	for _, f := range files {
		out, err := exec.CommandContext(ctx, "ldd", f).Output()
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			for _, w := range strings.Fields(sc.Text()) {
				if strings.HasPrefix(w, "/") {
					need[w] = true
				}
			}
		}
	}
	for _, m := range mods {
		need[m] = true
	}
	root := t.TempDir()
	for f := range need {
		// Debian's /lib and /lib64 are links into /usr: put every file
		// under /usr, so that UCX finds its modules beside libucs.
		dst := filepath.Join(root, f)
		if strings.HasPrefix(f, "/lib/") || strings.HasPrefix(f, "/lib64/") {
			dst = filepath.Join(root, "usr", f)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.CommandContext(ctx, "cp", "-L", f, dst).CombinedOutput(); err != nil {
			t.Fatalf("cp %s: %v\n%s", f, err, b)
		}
	}
	for _, l := range []string{"lib64", "lib"} {
		if err := os.Symlink("usr/"+l, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
