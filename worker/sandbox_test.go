package worker

import (
	"strings"
	"testing"

	"github.com/zorilla-p2p/zorilla/worker/proc"
)

func TestJobResources(t *testing.T) {
	const gib = int64(1) << 30
	for _, tc := range []struct {
		name   string
		policy Policy
		lease  Lease
		procs  int
		want   proc.Resources
	}{
		{"the job's request", Policy{MaxJobs: 2, Memory: 8 * gib}, Lease{Memory: 3 * gib, Cores: 2}, 2,
			proc.Resources{MemoryBytes: 3 * gib, Pids: 200, CPUs: 2}},
		{"no request: the share of J", Policy{MaxJobs: 4, Memory: 8 * gib}, Lease{Cores: 1}, 1,
			proc.Resources{MemoryBytes: 2 * gib, Pids: 100, CPUs: 1}},
		{"a request above what the owner lends", Policy{MaxJobs: 1, Memory: gib}, Lease{Memory: 2 * gib, Cores: 4}, 3,
			proc.Resources{MemoryBytes: gib, Pids: 300, CPUs: 4}},
		{"cores held beyond the processes (min_cores)", Policy{MaxJobs: 1, Memory: gib}, Lease{Cores: 8}, 2,
			proc.Resources{MemoryBytes: gib, Pids: 200, CPUs: 8}},
		{"a tiny request: the floor", Policy{MaxJobs: 1, Memory: gib}, Lease{Memory: 1 << 10, Cores: 1}, 1,
			proc.Resources{MemoryBytes: minJobMemory, Pids: 100, CPUs: 1}},
		{"an expired lease: the processes count", Policy{MaxJobs: 1, Memory: gib}, Lease{}, 3,
			proc.Resources{MemoryBytes: gib, Pids: 300, CPUs: 3}},
	} {
		if got := jobResources(tc.policy, tc.lease, tc.procs, 100); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestSandboxWords(t *testing.T) {
	res := proc.Resources{MemoryBytes: 64 << 20, Pids: 16}
	for _, tc := range []struct {
		exit proc.Exit
		want string
	}{
		{proc.Exit{}, ""},
		{proc.Exit{Code: 137, Signal: "SIGKILL", OutOfMemory: true}, "out of memory (the job may use 64M on this host)"},
		{proc.Exit{Code: 2, PidsLimit: true}, "limit of 16 processes"},
	} {
		got := sandboxWords(tc.exit, res)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.exit, got, tc.want)
		}
	}
}
