package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/node"
)

// sandboxAgent starts one agent with the default sandbox, as root, and
// skips the test where the sandbox cannot be whole.
func sandboxAgent(t *testing.T) *node.Node {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the sandbox needs the agent to run as root")
	}
	nd := agents(t, 1, 2)[0]
	sb := nd.Sandbox()
	if !strings.HasPrefix(sb.Users, "own uid") || strings.HasPrefix(sb.Cgroups, "none") {
		t.Skipf("no complete sandbox here: %s", sb)
	}
	return nd
}

// Through a real agent as root: a job cannot read the agent's key, its data
// dir or another running job's folder; one that allocates past its memory
// is stopped and the submitter is told why; the agent then runs the next
// job as before.
func TestSandboxThroughAgent(t *testing.T) {
	nd := sandboxAgent(t)
	data := nd.Config().DataDir
	out := zorilla("id", "--data-dir", data)
	if !strings.Contains(out.stdout, "sandbox users: own uid per job") {
		t.Errorf("zorilla id does not describe the sandbox:\n%v", out)
	}
	if want := "freezer: " + nd.Sandbox().Freezer + ";"; nd.Sandbox().Freezer == "" || !strings.Contains(out.stdout, want) {
		t.Errorf("zorilla id does not say which freezer stops jobs (want %q):\n%v", want, out)
	}

	// A job that keeps a secret in its folder, running meanwhile.
	owner := zorilla("submit", "--data-dir", data, "--detach",
		script(t, `echo secret > mine; echo ready > ready; sleep 60`))
	ownerID := strings.TrimSpace(owner.stdout)
	if owner.code != 0 || ownerID == "" {
		t.Fatalf("submit: %v", owner)
	}
	ownerDir := filepath.Join(nd.JobsDir(), ownerID)
	rankDir := filepath.Join(ownerDir, "rank-0.0") // where rank 0 works
	waitFor(t, 20*time.Second, "the first job is ready", func() bool {
		_, err := os.Stat(filepath.Join(rankDir, "ready"))
		return err == nil
	})
	defer zorilla("cancel", "--data-dir", data, ownerID)

	thief := zorilla("submit", "--data-dir", data, script(t, fmt.Sprintf(
		`id -u; cat %s/identity.key; ls %s; cat %s/mine; ls %s; echo end`, data, data, rankDir, ownerDir)))
	if strings.Count(thief.stdout+thief.stderr, "Permission denied") != 4 || strings.Contains(thief.stdout, "secret") ||
		!strings.Contains(thief.stdout, "[0] end") || !regexp.MustCompile(`(?m)^\[0\] 19\d{8}$`).MatchString(thief.stdout) {
		t.Errorf("the job read what it must not, or ran as root:\n%v", thief)
	}

	hog := zorilla("submit", "--data-dir", data, "--require", "mem=32M",
		script(t, `x=$(head -c 268435456 /dev/zero | tr '\000' a); echo survived`))
	if hog.code == 0 || strings.Contains(hog.stdout, "survived") || !strings.Contains(hog.stderr, "out of memory (the job may use 32M on this host)") {
		t.Errorf("the job past its memory was not stopped and reported:\n%v", hog)
	}

	next := zorilla("submit", "--data-dir", data, script(t, `echo still-fine`))
	if next.code != 0 || !strings.Contains(next.stdout, "[0] still-fine") {
		t.Errorf("the agent does not run the next job:\n%v", next)
	}
}

// Through a real agent as root: a job cannot connect to a TCP port the
// test opens on the host's loopback.
func TestSandboxNetworkThroughAgent(t *testing.T) {
	nd := sandboxAgent(t)
	if !strings.HasPrefix(nd.Sandbox().Network, "own namespace") {
		t.Skipf("no network isolation here: %s", nd.Sandbox().Network)
	}
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("needs /bin/bash for /dev/tcp")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	prog := filepath.Join(t.TempDir(), "prog.sh")
	body := fmt.Sprintf("#!/bin/bash\nif (exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null; then echo connected; else echo refused; fi\n", port)
	if err := os.WriteFile(prog, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	r := zorilla("submit", "--data-dir", nd.Config().DataDir, prog)
	if r.code != 0 || !strings.Contains(r.stdout, "[0] refused") {
		t.Errorf("the job reached the host's port, or failed:\n%v", r)
	}
}
