package proc

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

const nobody = 65534

// runAsSpec runs script as nobody in a job folder whose parents nobody can
// traverse. These tests are not parallel: Processes counts nobody's
// processes across the machine.
func runAsSpec(t *testing.T, script string) (Config, Spec) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("RunAs applies only when the agent runs as root")
	}
	base, err := os.MkdirTemp("", "zorilla-runas-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.RunAs = &Credential{UID: nobody, GID: nobody}
	return cfg, Spec{Job: "job-runas", Size: 1, Dir: filepath.Join(base, "jobs", "job-runas"),
		Program: "/bin/sh", Args: []string{"-c", script}}
}

func TestRunAsUnprivilegedUser(t *testing.T) {
	cfg, s := runAsSpec(t, `id -u; id -g; id -G; grep NoNewPrivs /proc/self/status; touch made && echo wrote`)
	c := newCollector()
	if e := wait(t, start(t, cfg, s, c)); !e.Success() {
		t.Fatalf("exit %s: %v", e, e.Tail)
	}
	want := []string{"65534", "65534", "65534", "NoNewPrivs:\t1", "wrote"}
	if got := c.all(""); !slices.Equal(got, want) {
		t.Fatalf("output %q, want %q", got, want)
	}
	for _, path := range []string{s.Dir, filepath.Join(s.Dir, "made")} {
		info, err := os.Stat(path)
		if err != nil || info.Sys().(*syscall.Stat_t).Uid != nobody {
			t.Fatalf("%s: %v %v, want owned by nobody", path, info, err)
		}
	}
	if err := Cleanup(s.Dir); err != nil {
		t.Fatal(err)
	}
}

func TestRunAsProcessesLimit(t *testing.T) {
	cfg, s := runAsSpec(t, `/bin/true && echo forked`)
	s.Limits = Limits{Processes: 1} // the shell itself is nobody's one process
	c := newCollector()
	e := wait(t, start(t, cfg, s, c))
	if slices.Contains(c.all(Stdout), "forked") || e.Success() {
		t.Fatalf("exit %s, output %q: the shell forked past a limit of 1 process", e, c.all(""))
	}
}
