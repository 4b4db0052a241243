package overlay

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

func testPeerID(t testing.TB, seed byte) peer.ID {
	t.Helper()
	sk, _, err := crypto.GenerateEd25519Key(strings.NewReader(strings.Repeat(string(rune('a'+seed)), 64)))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func encodeResponse(t testing.TB, recs ...peerRecord) []byte {
	b, err := json.Marshal(exchangeResponse{Peers: recs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeResponse(t *testing.T) {
	id := testPeerID(t, 1)
	addr := ma.StringCast("/ip4/127.0.0.1/tcp/4001")
	good := encodeRecord(peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{addr}})

	got, err := decodeResponse(encodeResponse(t, good))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != id || len(got[0].Addrs) != 1 || !got[0].Addrs[0].Equal(addr) {
		t.Fatalf("decoded %v", got)
	}

	many := make([]peerRecord, maxRecords+1)
	for i := range many {
		many[i] = good
	}
	tooManyAddrs := good
	for range maxRecordAddrs {
		tooManyAddrs.Addrs = append(tooManyAddrs.Addrs, addr.String())
	}
	for name, b := range map[string][]byte{
		"bad id":          encodeResponse(t, peerRecord{ID: "Qmnope", Addrs: []string{}}),
		"bad addr":        encodeResponse(t, peerRecord{ID: id.String(), Addrs: []string{"/ip4/999.1.1.1/tcp/1"}}),
		"too many peers":  encodeResponse(t, many...),
		"too many addrs":  encodeResponse(t, tooManyAddrs),
		"unknown field":   []byte(`{"peers":[],"extra":1}`),
		"trailing data":   []byte(`{"peers":[]} {}`),
		"not json":        []byte("\x00\x01"),
		"oversize":        []byte(`{"peers":[` + strings.Repeat(" ", maxResponseSize) + `]}`),
		"one bad of many": encodeResponse(t, good, peerRecord{ID: "x"}),
	} {
		if got, err := decodeResponse(b); err == nil {
			t.Errorf("%s: decoded %v, want an error", name, got)
		}
	}
}

func TestDecodeRequest(t *testing.T) {
	for b, want := range map[string]bool{`{"neighbour":true}`: true, `{"neighbour":false}`: false, `{}`: false} {
		got, err := decodeRequest([]byte(b))
		if err != nil || got.Neighbour != want {
			t.Errorf("%s: got %v, %v", b, got, err)
		}
	}
	for _, b := range []string{`{"neighbour":1}`, `{"n":true}`, `[]`, ``, strings.Repeat(" ", maxRequestSize+1) + "{}"} {
		if _, err := decodeRequest([]byte(b)); err == nil {
			t.Errorf("%q decoded", b)
		}
	}
}

func FuzzDecodeResponse(f *testing.F) {
	id := testPeerID(f, 2)
	f.Add(encodeResponse(f, encodeRecord(peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{ma.StringCast("/ip4/10.0.0.1/udp/4001/quic-v1")}})))
	f.Add([]byte(`{"peers":[]}`))
	f.Add([]byte(fmt.Sprintf(`{"peers":[{"id":%q,"addrs":["/dns4/x/tcp/1"]}]}`, id)))
	f.Add([]byte(`{"peers":[{"id":"","addrs":null}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		infos, err := decodeResponse(b)
		if err != nil {
			return
		}
		if len(infos) > maxRecords {
			t.Fatalf("%d records passed the bound", len(infos))
		}
		for _, ai := range infos {
			if ai.ID.Validate() != nil || len(ai.Addrs) > maxRecordAddrs {
				t.Fatalf("invalid record passed: %v", ai)
			}
		}
	})
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"neighbour":true}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeRequest(b)
	})
}
