package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/node"
)

func TestWriteStats(t *testing.T) {
	var b bytes.Buffer
	writeStats(&b, node.StatsInfo{Refused: map[string]uint64{"lease-rate": 7, "advert-rate-limited": 3},
		Adverts: flood.Stats{Received: 10, Delivered: 9, Dropped: map[flood.DropReason]uint64{flood.DropRateLimited: 3}}})
	want := "adverts received 10, delivered 9, forwarded 0, originated 0, dropped 3\n" +
		"staging bytes served as submitter 0 (whole files 0), as peer 0; fetched from submitters 0, from peers 0; corrupt chunks 0\n" +
		"refused advert-rate-limited 3\nrefused lease-rate 7\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestStatsCommand(t *testing.T) {
	dir := shortDataDir(t)
	runAgentInProcess(t, dir)
	r := zorilla("stats", "--data-dir", dir)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "adverts received 0,") || !strings.Contains(r.stdout, "\nrefused nothing\n") {
		t.Fatalf("zorilla stats on a new agent: %v", r)
	}
	if r := zorilla("stats", "--data-dir", dir, "extra"); r.code != 2 {
		t.Fatalf("stats with an argument: %v", r)
	}
	if r := zorilla("stats", "--data-dir", t.TempDir()); r.code != 1 || !strings.Contains(r.stderr, "agent is not running") {
		t.Fatalf("stats without an agent: %v", r)
	}
}
