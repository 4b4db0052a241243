package testnet

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/core/record"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
)

// A raw libp2p host, not an agent, speaks the advert protocol by hand to
// one agent: unsigned, forged and tampered adverts, a TTL over the cap, an
// oversized frame and garbage bytes. Each is dropped and counted under its
// reason, none reaches a worker or another agent, and the agent then runs
// a job as before.
func TestFloodBadInputFromRawHost(t *testing.T) {
	const agents, cores, victim = 4, 2, 0
	net := startLoopback(t, agents, func(_ int, cfg *node.Config) { e2eConfig(cfg, cores) })
	connected(t, net, 2)
	v := net.Nodes[victim]
	raw := rawHost(t, v)
	other := net.Nodes[1].ID()
	forgedJob := proto.NewJobID()
	maxTTL := v.Config().Services.Flood.MaxTTL
	rng := rand.New(rand.NewPCG(3, 3))
	garbage := make([]byte, 512)
	for i := range garbage {
		garbage[i] = byte(rng.UintN(256))
	}

	want := map[flood.DropReason]uint64{}
	for _, tc := range []struct {
		name   string
		bytes  []byte
		reason flood.DropReason
	}{
		{"unsigned", raw.message(t, 1, nil), flood.DropBadSignature},
		{"forged: signed by the raw host for another agent", raw.message(t, 1, raw.envelope(t, forgedJob, other)), flood.DropBadSignature},
		{"tampered after signing", raw.message(t, 1, raw.tampered(t, forgedJob)), flood.DropBadSignature},
		{"TTL over the cap", raw.message(t, maxTTL+1, raw.envelope(t, proto.NewJobID(), raw.h.ID())), flood.DropTTLOverCap},
		{"oversized frame", binary.AppendUvarint(nil, uint64(v.Config().Services.Flood.MaxAdvertSize+1)), flood.DropOversized},
		{"another protocol's bytes", []byte("GET / HTTP/1.1\r\nHost: zorilla\r\n\r\n" + strings.Repeat("x", 64)), flood.DropGarbage},
		{"a frame of random bytes", frame(t, garbage[:100]), flood.DropGarbage},
		{"random bytes", garbage, ""}, // garbage or oversized, as the first bytes read as a length
	} {
		total := v.Flooder().Stats().TotalDropped() + 1
		raw.send(t, v.ID(), tc.bytes)
		if tc.reason != "" {
			want[tc.reason]++
		}
		awaitNet(t, net, tc.name+" dropped and counted", func() bool {
			st := v.Flooder().Stats()
			return st.TotalDropped() == total && (tc.reason == "" || st.Dropped[tc.reason] == want[tc.reason])
		})
	}
	for i, nd := range net.Nodes {
		st := nd.Flooder().Stats()
		if st.Received != 0 || st.Delivered != 0 || (i != victim && st.TotalDropped() != 0) {
			t.Errorf("agent %d: %+v; nothing should have got through or been passed on", i, st)
		}
		if l, ok := nd.Leases().ByJob(forgedJob); ok {
			t.Errorf("agent %d leased slots to the forged advert: %+v", i, l)
		}
	}

	// The victim still floods, offers and runs: a job on every slot.
	d := job.NewDescription("job.sh", nil, agents*cores)
	d.Strategy = job.Concentrate
	rec := awaitEnd(t, v, submit(t, v, d, upload(t, v, "exit 0"), false))
	if rec.State != job.Done {
		t.Fatalf("job after the bad input ended %s: %s", rec.State, rec.Reason)
	}
	if hosts := planHosts(t, net, rec.Plan); hosts[victim] != cores || len(hosts) != agents {
		t.Fatalf("plan %v: want all %d agents, the victim with %d processes", hosts, agents, cores)
	}
	t.Logf("drops on the victim: %v", v.Flooder().Stats().Dropped)
}

// attackerHost is a libp2p host on loopback with no Zorilla service.
type attackerHost struct {
	proto protocol.ID // the advert protocol of the agents' network
	h     host.Host
	key   crypto.PrivKey
}

func rawHost(t *testing.T, to *node.Node) *attackerHost {
	t.Helper()
	key, _ := newIdentity(t)
	h, err := libp2p.New(libp2p.Identity(key), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Connect(ctx, to.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	return &attackerHost{h: h, key: key, proto: flood.Protocol(to.Config().Network)}
}

// send writes b on a new advert stream to p and closes it.
func (a *attackerHost) send(t *testing.T, p peer.ID, b []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := a.h.NewStream(ctx, p, a.proto)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = s.Write(b) // the agent may reset the stream before reading it all
	_ = s.Close()
}

// advertRecord is the flood's signed record as it is on the wire (flood's
// doc.go and advert.go): JSON in a libp2p signed envelope.
type advertRecord struct {
	Job       string   `json:"job"`
	Submitter string   `json:"submitter"`
	Addrs     []string `json:"addrs,omitempty"`
	Body      []byte   `json:"body,omitempty"`
	Issued    int64    `json:"issued"`
	Expires   int64    `json:"expires"`
}

func (*advertRecord) Domain() string                   { return "zorilla-flood-advert" }
func (*advertRecord) Codec() []byte                    { return []byte("/zorilla/flood/advert/1") }
func (r *advertRecord) MarshalRecord() ([]byte, error) { return json.Marshal(r) }
func (r *advertRecord) UnmarshalRecord(b []byte) error { return json.Unmarshal(b, r) }

// envelope signs, with the raw host's key, an advert for job j that claims
// submitter as its submitter, with a need any agent would accept.
func (a *attackerHost) envelope(t *testing.T, j job.ID, submitter peer.ID) []byte {
	t.Helper()
	body, err := proto.EncodeNeed(proto.Need{Job: j, N: 1, R: 1})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rec := &advertRecord{Job: string(j), Submitter: submitter.String(), Body: body,
		Issued: now.UnixNano(), Expires: now.Add(time.Minute).UnixNano()}
	for _, m := range a.h.Addrs() {
		rec.Addrs = append(rec.Addrs, m.String())
	}
	env, err := record.Seal(rec, a.key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := env.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tampered is an envelope the raw host signed honestly (itself as the
// submitter), whose payload was then changed to another job.
func (a *attackerHost) tampered(t *testing.T, j job.ID) []byte {
	t.Helper()
	env, err := record.UnmarshalEnvelope(a.envelope(t, proto.NewJobID(), a.h.ID()))
	if err != nil {
		t.Fatal(err)
	}
	var rec advertRecord
	if err := json.Unmarshal(env.RawPayload, &rec); err != nil {
		t.Fatal(err)
	}
	rec.Job = string(j)
	if env.RawPayload, err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	b, err := env.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// message frames one advert message {ttl, envelope}.
func (a *attackerHost) message(t *testing.T, ttl int, env []byte) []byte {
	t.Helper()
	b, err := json.Marshal(struct {
		TTL      int    `json:"ttl"`
		Envelope []byte `json:"envelope"`
	}{ttl, env})
	if err != nil {
		t.Fatal(err)
	}
	return frame(t, b)
}

func frame(t *testing.T, payload []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := wire.WriteFrame(&out, payload); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
