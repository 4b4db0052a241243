package web

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
)

func FuzzDecodeLinks(f *testing.F) {
	f.Add([]byte(`{"labels":["site=a"],"links":[{"peer":"12D3KooWCfmRRkqJZvCJGQQJ7mK9Ti3jwR7X8WBsoNZRTVErg729","rtt_ms":0.5,"neighbour":true}]}`))
	f.Add([]byte(`{"labels":[],"links":[]}`))
	f.Add([]byte(`{"links":[{"peer":"x","rtt_ms":-1}]}`))
	f.Add([]byte(`{"links":[{"peer":"12D3KooWCfmRRkqJZvCJGQQJ7mK9Ti3jwR7X8WBsoNZRTVErg729","rtt_ms":1e300}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSelf(b)
		if err != nil {
			return
		}
		if len(s.Links) > maxLinks || len(s.Labels) > maxLabels {
			t.Fatalf("accepted %d links, %d labels", len(s.Links), len(s.Labels))
		}
		for _, l := range s.Links {
			if l.RTTms < 0 || l.RTTms > 1e6 {
				t.Fatalf("accepted RTT %v", l.RTTms)
			}
		}
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeSelf(again); err != nil {
			t.Fatalf("re-encoded answer refused: %v", err)
		}
	})
}

func TestDecodeLinksBounds(t *testing.T) {
	id := "12D3KooWCfmRRkqJZvCJGQQJ7mK9Ti3jwR7X8WBsoNZRTVErg729"
	many := Self{Labels: []string{}}
	for range maxLinks + 1 {
		many.Links = append(many.Links, Link{Peer: id})
	}
	tooMany, _ := json.Marshal(many)
	for name, b := range map[string][]byte{
		"too many links":  tooMany,
		"long label":      []byte(`{"labels":["` + strings.Repeat("x", maxLabelLen+1) + `"],"links":[]}`),
		"bad peer":        []byte(`{"labels":[],"links":[{"peer":"nope"}]}`),
		"unknown field":   []byte(`{"labels":[],"links":[],"extra":1}`),
		"oversized frame": []byte(strings.Repeat(" ", maxLinksFrame+1)),
		"negative RTT":    []byte(`{"links":[{"peer":"` + id + `","rtt_ms":-0.5}]}`),
	} {
		if _, err := decodeSelf(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// trim makes any answer fit.
	if got := many.trim(); len(got.Links) != maxLinks {
		t.Errorf("trim kept %d links", len(got.Links))
	}
}

func TestAskLinks(t *testing.T) {
	mn := mocknet.New()
	defer mn.Close()
	a, err := mn.GenPeer()
	if err != nil {
		t.Fatal(err)
	}
	b, err := mn.GenPeer()
	if err != nil {
		t.Fatal(err)
	}
	if err := mn.LinkAll(); err != nil {
		t.Fatal(err)
	}
	want := Self{Labels: []string{"site=b"}, Links: []Link{{Peer: a.ID().String(), RTTms: 1.5, Conn: "direct", Neighbour: true}}}
	stop := ServeLinks(b, func() Self { return want })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := AskLinks(ctx, a, b.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Links) != 1 || got.Links[0] != want.Links[0] || got.Labels[0] != "site=b" {
		t.Errorf("got %+v, want %+v", got, want)
	}
	stop()
	if _, err := AskLinks(ctx, a, b.ID()); err == nil {
		t.Error("asked after stop: answered")
	}
}
