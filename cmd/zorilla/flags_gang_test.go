package main

import (
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/node"
)

func TestGangFlags(t *testing.T) {
	parse := func(args ...string) (gang.Config, error) {
		var cfg node.Config
		app := &cli.App{Flags: gangFlags(), Action: func(c *cli.Context) error { return gangConfig(c, &cfg) }}
		err := app.Run(append([]string{"zorilla"}, args...))
		return cfg.Services.Worker.Gang, err
	}
	if g, err := parse(); err != nil || g.Columns != 0 {
		t.Fatalf("default: %+v, %v; want off", g, err)
	}
	if g, err := parse("--gang-slice", "3s"); err != nil || g.Slice != 3*time.Second || g.Columns != gang.DefaultConfig().Columns {
		t.Fatalf("--gang-slice 3s: %+v, %v", g, err)
	}
	if g, err := parse("--gang-slice", "1s", "--gang-columns", "2"); err != nil || g.Columns != 2 {
		t.Fatalf("--gang-columns 2: %+v, %v", g, err)
	}
}

func TestGangFlagsRefuseBadValues(t *testing.T) {
	dir := shortDataDir(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--gang-slice", "-1s"}, "--gang-slice/--gang-columns: gang: slice -1s is shorter than 1ms"},
		{[]string{"--gang-slice", "1s", "--gang-columns", "0"}, "--gang-slice/--gang-columns: gang: 0 columns, want 1..64"},
		{[]string{"--gang-slice", "1s", "--gang-columns", "65"}, "gang: 65 columns, want 1..64"},
	} {
		args := append([]string{"agent", "--data-dir", dir, "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false"}, tc.args...)
		r := zorilla(args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: want exit 2 and one line with %q, got %v", tc.args, tc.want, r)
		}
	}
}
