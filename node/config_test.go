package node

import (
	"errors"
	"strings"
	"testing"
)

func TestDefaultConfigValid(t *testing.T) {
	if err := DefaultConfig().validate(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrors(t *testing.T) {
	const id = "12D3KooWLRPJAA5o6Cj9GDcC5AjByEEKjy1k3ZXgtU3K4E3vTnBR"
	for _, tc := range []struct {
		name string
		mut  func(*Config)
		want string // in the message
	}{
		{"listen", func(c *Config) { c.Listen = []string{"/ip4/1.2.3/tcp/1"} }, `listen address "/ip4/1.2.3/tcp/1"`},
		{"bootstrap garbage", func(c *Config) { c.Bootstrap = []string{"not-an-addr"} }, `bootstrap address "not-an-addr"`},
		{"bootstrap without peer", func(c *Config) { c.Bootstrap = []string{"/ip4/1.2.3.4/tcp/4001"} }, "/p2p/<peer ID>"},
		{"bootstrap bad peer", func(c *Config) { c.Bootstrap = []string{"/ip4/1.2.3.4/tcp/4001/p2p/QmNope"} }, "bootstrap address"},
		{"cores", func(c *Config) { c.Cores = 0 }, "cores 0 < 1"},
		{"max jobs", func(c *Config) { c.MaxJobs = -1 }, "max jobs -1"},
		{"max procs", func(c *Config) { c.MaxProcs = 0 }, "max procs 0"},
		{"memory", func(c *Config) { c.Memory = 1000 }, "memory 1000 bytes"},
		{"label", func(c *Config) { c.Labels = []string{"a,b"} }, `label "a,b"`},
		{"empty label", func(c *Config) { c.Labels = []string{""} }, `label ""`},
		{"subnet", func(c *Config) { c.TrustedSubnets = []string{"10.0.0.0/33"} }, "trusted subnet"},
		{"watermarks", func(c *Config) { c.ConnLow, c.ConnHigh = 10, 5 }, "watermarks"},
		{"overlay", func(c *Config) { c.Overlay.K = 0 }, "K 0 < 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mut(&c)
			err := c.validate()
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrInvalidConfig mentioning %q", err, tc.want)
			}
		})
	}
	c := DefaultConfig()
	c.Bootstrap = []string{"/ip4/1.2.3.4/tcp/4001/p2p/" + id, "/ip4/1.2.3.4/udp/4001/quic-v1/p2p/" + id}
	infos, err := ParseBootstrap(c.Bootstrap)
	if err != nil || len(infos) != 1 || len(infos[0].Addrs) != 2 {
		t.Fatalf("two addresses of one peer: %v, %v", infos, err)
	}
}

func TestParseMeminfo(t *testing.T) {
	for in, want := range map[string]int64{
		"MemTotal:       16318680 kB\nMemFree: 1 kB\n": 16318680 << 10,
		"Foo: 1 kB\nMemTotal: 2048 kB\n":               2048 << 10,
	} {
		got, err := parseMeminfo(strings.NewReader(in))
		if err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MemTotal: 12 MB\n", "MemTotal: -5 kB\n", "MemTotal: x kB\n", "MemTotal:\n"} {
		if got, err := parseMeminfo(strings.NewReader(in)); err == nil {
			t.Errorf("%q: %d, want an error", in, got)
		}
	}
	if TotalMemory() < minMemory {
		t.Errorf("TotalMemory %d", TotalMemory())
	}
}
