package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLookupUser(t *testing.T) {
	for in, want := range map[string]string{
		"1234":                 "1234:1234",
		"1234:99":              "1234:99",
		"0":                    "error",
		"5:0":                  "error",
		"root":                 "error",
		"x:y":                  "error",
		"no-such-user-zorilla": "error",
	} {
		c, err := lookupUser(in)
		got := "error"
		if err == nil {
			got = fmt.Sprintf("%d:%d", c.UID, c.GID)
		}
		if got != want {
			t.Errorf("lookupUser(%q) = %s (%v), want %s", in, got, err, want)
		}
	}
}

func TestCheckSandbox(t *testing.T) {
	for _, tc := range []struct {
		runAs, uids, network string
		ok                   bool
	}{
		{RunAsAuto, "", JobNetworkIsolated, true},
		{RunAsNone, "", JobNetworkHost, true},
		{"4321", "2000000-2000099", JobNetworkIsolated, true},
		{"root", "", JobNetworkIsolated, false},
		{RunAsAuto, "5-1", JobNetworkIsolated, false},
		{RunAsAuto, "", "bridge", false},
	} {
		c := DefaultConfig()
		c.RunAs, c.UIDRange, c.JobNetwork = tc.runAs, tc.uids, tc.network
		if err := checkSandbox(c); (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc, err)
		}
	}
}

// A sandboxed agent's job folders leave the 0700 data dir for a 0711
// folder of its own outside; one someone else made there is refused.
func TestJobsRoot(t *testing.T) {
	work := t.TempDir()
	if got, err := jobsRoot(work, false); err != nil || got != work {
		t.Fatalf("unsandboxed: %q, %v", got, err)
	}
	root, err := jobsRoot(work, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if root != sandboxRoot(work) || filepath.Join(root, "work") != JobsDirOf(work, true) {
		t.Fatalf("root %q, want %q", root, sandboxRoot(work))
	}
	for dir, want := range map[string]os.FileMode{work: 0o700, root: 0o711} {
		if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != want {
			t.Fatalf("%s: %v %v, want mode %v", dir, info.Mode(), err, want)
		}
	}
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := jobsRoot(work, true); err == nil || !strings.Contains(err.Error(), "written by others") {
		t.Fatalf("a world-writable jobs folder: %v", err)
	}
}

// A sandboxed agent that stops leaves nothing in /var/tmp: its jobs folder
// and MPI socket go with it (a killed one's stay for the next start).
func TestSandboxRootRemovedOnClose(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the jobs folder moves out of the data dir only as root")
	}
	for _, dataDir := range []string{shortDir(t), ""} {
		n := startNode(t, testConfig(dataDir))
		root := filepath.Dir(n.JobsDir())
		if _, err := os.Stat(filepath.Join(root, "mpi.sock")); err != nil {
			t.Fatalf("data dir %q: no MPI socket in %s: %v", dataDir, root, err)
		}
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			entries, _ := os.ReadDir(root)
			t.Fatalf("data dir %q: %s still there after Close (%v, %d entries)", dataDir, root, err, len(entries))
		}
	}
}
