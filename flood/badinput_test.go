package flood

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/record"
)

// attacker is a bare host speaking the protocol by hand.
type attacker struct {
	t   *testing.T
	h   host.Host
	key crypto.PrivKey
}

func newAttacker(t *testing.T, h host.Host) *attacker {
	return &attacker{t: t, h: h, key: h.Peerstore().PrivKey(h.ID())}
}

// raw writes b as is on a new stream to p.
func (a *attacker) raw(p peer.ID, b []byte) {
	a.t.Helper()
	s, err := a.h.NewStream(context.Background(), p, ProtocolID)
	if err != nil {
		a.t.Fatal(err)
	}
	_, _ = s.Write(b)
	_ = s.Close()
}

// frame writes one message as a frame.
func (a *attacker) frame(p peer.ID, ttl int, env []byte) {
	a.t.Helper()
	msg, err := encodeMessage(env, ttl)
	if err != nil {
		a.t.Fatal(err)
	}
	a.raw(p, frameOf(msg))
}

func frameOf(b []byte) []byte {
	var hdr [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[:], uint64(len(b)))
	return append(hdr[:n:n], b...)
}

// signed returns a's envelope signed with the attacker's key, a.Submitter
// left as given (so it may lie).
func (a *attacker) signed(adv Advert) []byte {
	a.t.Helper()
	now := time.Now()
	if adv.Issued.IsZero() {
		adv.Issued, adv.Expires = now, now.Add(time.Minute)
	}
	if adv.Submitter == "" {
		adv.Submitter = a.h.ID()
	}
	env, err := seal(adv, a.key)
	if err != nil {
		a.t.Fatal(err)
	}
	return env
}

// tampered returns a valid envelope whose payload was changed after signing.
func (a *attacker) tampered() []byte {
	a.t.Helper()
	env, err := record.UnmarshalEnvelope(a.signed(Advert{Job: "honest"}))
	if err != nil {
		a.t.Fatal(err)
	}
	env.RawPayload = []byte(fmt.Sprintf(`{"job":"evil","submitter":%q,"issued":1,"expires":%d}`,
		a.h.ID(), time.Now().Add(time.Minute).UnixNano()))
	b, err := env.Marshal()
	if err != nil {
		a.t.Fatal(err)
	}
	return b
}

func TestBadInputDroppedAndCounted(t *testing.T) {
	c := newClusterWithBare(t, [][]int{{}}, 1, nil)
	victim, v := c.fl[0], c.hosts[0].ID()
	att := newAttacker(t, c.hosts[1])
	past := time.Now().Add(-time.Hour)

	want := map[DropReason]uint64{}
	for _, tc := range []struct {
		name   string
		send   func()
		reason DropReason
	}{
		{"unsigned", func() { att.frame(v, 1, nil) }, DropBadSignature},
		{"tampered payload", func() { att.frame(v, 1, att.tampered()) }, DropBadSignature},
		{"forged submitter", func() { att.frame(v, 1, att.signed(Advert{Job: "j", Submitter: v})) }, DropBadSignature},
		{"oversized", func() {
			att.raw(v, append(binary.AppendUvarint(nil, uint64(victim.cfg.MaxAdvertSize+1)), make([]byte, 64)...))
		}, DropOversized},
		{"TTL over cap", func() { att.frame(v, victim.cfg.MaxTTL+1, att.signed(Advert{Job: "j"})) }, DropTTLOverCap},
		{"TTL zero", func() { att.frame(v, 0, att.signed(Advert{Job: "j"})) }, DropGarbage},
		{"not JSON", func() { att.raw(v, frameOf([]byte("hello, flooder"))) }, DropGarbage},
		{"unknown field", func() { att.raw(v, frameOf([]byte(`{"ttl":1,"envelope":"","x":1}`))) }, DropGarbage},
		{"truncated frame", func() { att.raw(v, []byte{0x40, 'a', 'b'}) }, DropGarbage},
		{"envelope not protobuf", func() { att.frame(v, 1, []byte("garbage garbage")) }, DropGarbage},
		{"empty stream", func() { att.raw(v, nil) }, DropGarbage},
		{"expired", func() {
			att.frame(v, 1, att.signed(Advert{Job: "j", Issued: past.Add(-time.Hour), Expires: past}))
		}, DropExpired},
		{"expires too far ahead", func() {
			att.frame(v, 1, att.signed(Advert{Job: "j", Issued: time.Now(), Expires: time.Now().Add(24 * time.Hour)}))
		}, DropGarbage},
	} {
		tc.send()
		want[tc.reason]++
		waitFor(t, tc.name+" to be counted as "+string(tc.reason), func() bool {
			return victim.Stats().Dropped[tc.reason] == want[tc.reason]
		})
	}
	// The victim keeps serving: an honest advert from the same peer gets in.
	att.frame(v, 1, att.signed(Advert{Job: "honest", Body: []byte("need")}))
	waitFor(t, "the honest advert", func() bool { return lastTTL(c.rec[0].deliveries(), "honest") == 1 })
	st := victim.Stats()
	if fmt.Sprint(st.Dropped) != fmt.Sprint(want) || st.Received != 1 || st.Delivered != 1 {
		t.Fatalf("stats %+v, want drops %v, 1 received and delivered", st, want)
	}
}

func TestRateLimitPerPeer(t *testing.T) {
	fc := newFakeClock(time.Now()) // frozen: no refill during the test
	c := newClusterWithBare(t, [][]int{{}}, 1, func(_ int, cfg *Config) {
		cfg.Clock, cfg.Rate, cfg.Burst = fc, 1, 3
	})
	victim, v := c.fl[0], c.hosts[0].ID()
	att := newAttacker(t, c.hosts[1])
	for i := range 5 {
		att.frame(v, 1, att.signed(Advert{Job: fmt.Sprint("j", i)}))
	}
	waitFor(t, "all five handled", func() bool {
		st := victim.Stats()
		return st.Received+st.TotalDropped() == 5
	})
	if st := victim.Stats(); st.Received != 3 || st.Dropped[DropRateLimited] != 2 {
		t.Fatalf("stats %+v, want 3 received, 2 rate-limited", st)
	}
	fc.set(fc.Now().Add(time.Second)) // one token back
	att.frame(v, 1, att.signed(Advert{Job: "later"}))
	waitFor(t, "the advert after refill", func() bool { return lastTTL(c.rec[0].deliveries(), "later") == 1 })
}

// A receiver whose clock is past the advert's expiry drops it.
func TestExpiredByReceiverClock(t *testing.T) {
	fc := newFakeClock(time.Now().Add(time.Hour))
	c := newCluster(t, line(2), func(i int, cfg *Config) {
		if i == 1 {
			cfg.Clock = fc
		}
	})
	if err := c.fl[0].Flood(context.Background(), Advert{Job: "old"}, 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the drop", func() bool { return c.fl[1].Stats().Dropped[DropExpired] == 1 })
	if n := len(c.rec[1].deliveries()); n != 0 {
		t.Fatalf("expired advert delivered %d times", n)
	}
}

// Sends that find the queue full are dropped and counted, not blocked on.
func TestSendQueueFullIsCounted(t *testing.T) {
	hosts := newHosts(t, 1)
	many := make(staticNeighbours, 0, 50)
	for i := range 50 {
		many = append(many, peer.ID(fmt.Sprint("unreachable-", i)))
	}
	cfg := testConfig()
	cfg.SendQueue, cfg.Senders = 1, 1
	f, err := New(hosts[0], many, func(context.Context, Advert) {}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Flood(context.Background(), Advert{Job: "j"}, 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every send accounted for", func() bool {
		st := f.Stats()
		return st.Sent+st.SendErrors+st.Dropped[DropQueueFull] == 50
	})
	if st := f.Stats(); st.Dropped[DropQueueFull] == 0 {
		t.Fatalf("no queue-full drop with a queue of 1: %+v", st)
	}
}
