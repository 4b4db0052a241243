package job

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

func TestSeenSummary(t *testing.T) {
	offers := func(slots ...int) []Offer {
		var out []Offer
		for i, s := range slots {
			out = append(out, Offer{Peer: peer.ID(fmt.Sprint(i)), Slots: s})
		}
		return out
	}
	tests := []struct {
		name     string
		offers   []Offer
		declined []DeclineCount
		want     string
	}{
		{name: "nobody answered", want: ""},
		{name: "the issue's example", offers: nil, declined: []DeclineCount{
			{Code: proto.DeclinePolicy, Agents: 18}, {Code: proto.DeclineBusy, Agents: 5}, {Code: proto.DeclineMemory, Detail: "mem=8G", Agents: 1}},
			want: "24 agents saw the advert: 18 do not allow you, 5 are busy, 1 lacks mem=8G"},
		{name: "offers and declines", offers: offers(2, 4), declined: []DeclineCount{
			{Code: proto.DeclineRequirement, Detail: "os=windows", Agents: 3}, {Code: proto.DeclineSlots, Agents: 1}},
			want: "6 agents saw the advert: 2 offered 6 slots, 3 lack os=windows, 1 has no free slot"},
		{name: "one agent", declined: []DeclineCount{{Code: proto.DeclinePolicy, Agents: 1}},
			want: "1 agent saw the advert: 1 does not allow you"},
		{name: "draining", declined: []DeclineCount{{Code: proto.DeclineDraining, Agents: 2}},
			want: "2 agents saw the advert: 2 are stopping"},
		{name: "too large", declined: []DeclineCount{{Code: proto.DeclineSize, Detail: "n*r<=4096", Agents: 3}},
			want: "3 agents saw the advert: 3 take only jobs of n*r<=4096 processes"},
		{name: "isolated network", declined: []DeclineCount{{Code: proto.DeclineNetwork, Detail: "job-network=isolated", Agents: 1}},
			want: "1 agent saw the advert: 1 gives jobs only loopback, so MPICH ranks there cannot reach other hosts (their owner can allow it with --job-network host)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SeenSummary(tt.offers, tt.declined); got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func FuzzDecodeDecline(f *testing.F) {
	f.Add([]byte(`{"job":"j1","code":"busy"}`))
	f.Add([]byte(`{"job":"j1","code":"memory","detail":"mem=8G"}`))
	f.Add([]byte(`{"job":"j1","code":"policy","extra":1}`))
	f.Add([]byte(`{"job":"j1","code":"requirement","detail":"\u0000"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m proto.DeclineMsg
		if wire.DecodeJSON(b, &m) != nil || m.Validate() != nil {
			return
		}
		if s := SeenSummary(nil, []DeclineCount{{Code: m.Code, Detail: m.Detail, Agents: 1}}); !strings.HasPrefix(s, "1 agent saw the advert: 1 ") {
			t.Fatalf("summary %q", s)
		}
		enc, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back proto.DeclineMsg
		if err := wire.DecodeJSON(enc, &back); err != nil || back != m {
			t.Fatalf("round trip: %+v, %v", back, err)
		}
	})
}
