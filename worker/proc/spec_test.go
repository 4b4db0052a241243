package proc

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func validSpec() Spec {
	return Spec{Job: "j", Rank: 1, Replica: 0, Size: 2, Dir: "/var/lib/zorilla/jobs/j", Program: "/var/lib/zorilla/jobs/j/prog"}
}

func TestSpecValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		mut  func(*Spec)
		want string // part of the error; "" for valid
	}{
		"valid":            {func(*Spec) {}, ""},
		"with env":         {func(s *Spec) { s.Env = []string{"A=1", "EMPTY="} }, ""},
		"no job":           {func(s *Spec) { s.Job = "" }, "job"},
		"size 0":           {func(s *Spec) { s.Size, s.Rank = 0, 0 }, "size"},
		"rank = size":      {func(s *Spec) { s.Rank = 2 }, "rank 2"},
		"negative rank":    {func(s *Spec) { s.Rank = -1 }, "rank -1"},
		"negative replica": {func(s *Spec) { s.Replica = -1 }, "replica"},
		"negative timeout": {func(s *Spec) { s.Timeout = -time.Second }, "timeout"},
		"relative dir":     {func(s *Spec) { s.Dir = "jobs/j" }, "folder"},
		"root dir":         {func(s *Spec) { s.Dir = "/" }, "folder"},
		"unclean dir":      {func(s *Spec) { s.Dir = "/var/lib/../j" }, "folder"},
		"relative program": {func(s *Spec) { s.Program = "prog" }, "program"},
		"NUL in argument":  {func(s *Spec) { s.Args = []string{"ok", "a\x00b"} }, "argument 1"},
		"env without =":    {func(s *Spec) { s.Env = []string{"A"} }, "KEY=value"},
		"env empty key":    {func(s *Spec) { s.Env = []string{"=1"} }, "KEY=value"},
		"env sets rank":    {func(s *Spec) { s.Env = []string{EnvRank + "=0"} }, EnvRank},
		"env sets shim":    {func(s *Spec) { s.Env = []string{shimEnv + "=v1"} }, shimEnv},
	} {
		s := validSpec()
		tc.mut(&s)
		err := s.validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: validate() = %v, want error containing %q", name, err, tc.want)
		}
	}
}

func TestEnviron(t *testing.T) {
	s := validSpec()
	s.Env = []string{"B=2", "HOME=/elsewhere", "A=1", "B=3"}
	got := s.environ("/bin")
	want := []string{"PATH=/bin", "HOME=/elsewhere", "TMPDIR=" + s.Dir, "B=3", "A=1",
		"ZORILLA_JOB=j", "ZORILLA_RANK=1", "ZORILLA_SIZE=2", "ZORILLA_REPLICA=0"}
	if !slices.Equal(got, want) {
		t.Fatalf("environ =\n%q\nwant\n%q", got, want)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	for name, mut := range map[string]func(*Config){
		"no grace":          func(c *Config) { c.KillGrace = 0 },
		"no start timeout":  func(c *Config) { c.StartTimeout = 0 },
		"no settle timeout": func(c *Config) { c.SettleTimeout = 0 },
		"tiny lines":        func(c *Config) { c.MaxLineBytes = 4 },
		"no tail":           func(c *Config) { c.TailLines = 0 },
		"tail below line":   func(c *Config) { c.TailBytes = c.MaxLineBytes - 1 },
		"no path":           func(c *Config) { c.Path = "" },
		"run as root":       func(c *Config) { c.RunAs = &Credential{UID: 0, GID: 0} },
		"relative parent":   func(c *Config) { c.CgroupParent = "jobs" },
		"unclean parent":    func(c *Config) { c.CgroupParent = "/a/../jobs" },
		"parent with slash": func(c *Config) { c.CgroupParent = "/jobs/" },
	} {
		c := DefaultConfig()
		mut(&c)
		if c.validate() == nil {
			t.Errorf("%s: validate accepted %+v", name, c)
		}
	}
}

func TestExitString(t *testing.T) {
	for _, tc := range []struct {
		e    Exit
		want string
	}{
		{Exit{}, "exit 0"},
		{Exit{Code: 3}, "exit 3"},
		{Exit{Code: 143, Signal: "SIGTERM", TimedOut: true}, "killed by SIGTERM (timed out)"},
		{Exit{Code: 137, Signal: "SIGKILL", Killed: true}, "killed by SIGKILL (killed)"},
	} {
		if got := tc.e.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.e, got, tc.want)
		}
	}
}
