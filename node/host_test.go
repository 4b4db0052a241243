package node

import (
	"fmt"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
	ma "github.com/multiformats/go-multiaddr"
)

// TestResourceManagerTrustedSubnets checks a limit testnets hit:
// libp2p allows 8 connections per remote IPv4 address, which stalls
// a testnet whose agents share an address; trusted subnets lift it.
func TestResourceManagerTrustedSubnets(t *testing.T) {
	rm, err := newResourceManager(DefaultConfig().TrustedSubnets)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	open := func(addr string, n int) int {
		ok := 0
		for i := range n {
			a := ma.StringCast(fmt.Sprintf("%s/tcp/%d", addr, 1000+i))
			if scope, err := rm.OpenConnection(network.DirInbound, true, a); err == nil {
				ok++
				defer scope.Done()
			}
		}
		return ok
	}
	for _, addr := range []string{"/ip4/10.1.2.3", "/ip4/172.17.0.5", "/ip4/192.168.1.9", "/ip4/127.0.0.1", "/ip6/fd00::1"} {
		if got := open(addr, 40); got != 40 {
			t.Errorf("%s: %d of 40 connections accepted, want all", addr, got)
		}
	}
	if got := open("/ip4/8.8.8.8", 40); got > 16 {
		t.Errorf("public address: %d of 40 connections accepted, want libp2p's limit", got)
	}
	if _, err := newResourceManager([]string{"10.0.0.0/99"}); err == nil {
		t.Error("a bad subnet was accepted")
	}
}

func FuzzParseBootstrap(f *testing.F) {
	f.Add("/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWLRPJAA5o6Cj9GDcC5AjByEEKjy1k3ZXgtU3K4E3vTnBR")
	f.Add("/ip4/1.2.3.4/udp/1/quic-v1")
	f.Add("/dns4/example.org/tcp/1/p2p/QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N")
	f.Add("garbage")
	f.Fuzz(func(t *testing.T, s string) {
		infos, err := ParseBootstrap([]string{s})
		if err == nil && (len(infos) != 1 || infos[0].ID.Validate() != nil) {
			t.Fatalf("%q parsed to %v", s, infos)
		}
	})
}

func FuzzParseMeminfo(f *testing.F) {
	f.Add("MemTotal:       16318680 kB\n")
	f.Add("MemTotal: 1 MB\n")
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := parseMeminfo(strings.NewReader(s)); err == nil && n <= 0 {
			t.Fatalf("%q gave %d", s, n)
		}
	})
}
