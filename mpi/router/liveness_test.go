package router_test

import (
	"bufio"
	"errors"
	"fmt"
	jobproto "github.com/zorilla-p2p/zorilla/job/proto"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// fakeAgent is a libp2p host that speaks just enough of the link protocol
// to be part of a job, then goes silent.
func fakeAgent(t *testing.T, c *mpitest.Cluster) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.Transport(tcp.NewTCPTransport, tcp.DisableReuseport()), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	for _, a := range c.Hosts {
		a.Peerstore().AddAddrs(h.ID(), h.Addrs(), peerstore.PermanentAddrTTL)
		h.Peerstore().AddAddrs(a.ID(), a.Addrs(), peerstore.PermanentAddrTTL)
	}
	return h
}

// silentJob adds a 2-rank job with rank 0 on agent 0 and rank 1 on the
// fake agent, and starts rank 0 blocked in a receive from rank 1.
func silentJob(t *testing.T, c *mpitest.Cluster, fake host.Host) (*router.Job, mpi.Options, <-chan error) {
	t.Helper()
	opt := mpi.Options{Socket: c.Routers[0].Socket(), Job: "silent", Key: "k", Rank: 0, Size: 2}
	rj, err := c.Routers[0].AddJob(router.JobSpec{ID: "silent", Key: "k", Size: 2, Replicas: 1,
		Table: jobproto.RankTableOf([][]peer.ID{{c.Hosts[0].ID()}, {fake.ID()}}, nil), Local: []router.Proc{{Rank: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Routers[0].RemoveJob("silent") })
	errc := make(chan error, 1)
	go func() {
		s, err := mpi.InitWith(ctxFor(t, 20*time.Second), opt)
		if err == nil {
			_, err = mpi.Recv(s.World(), make([]byte, 1), 1, 0)
		}
		errc <- err
	}()
	<-rj.InitReady()
	return rj, opt, errc
}

// checkLost checks the blocked rank got an "agent lost" failure within the
// heartbeat timeout and a margin, and the events say so.
func checkLost(t *testing.T, rj *router.Job, fake peer.ID, cfg router.Config, start time.Time, errc <-chan error) {
	t.Helper()
	err := <-errc
	took := time.Since(start)
	var je *mpi.JobError
	if !errors.As(err, &je) || je.Cause != "agent lost" || je.Rank != 1 {
		t.Fatalf("blocked receive: %v, want agent lost naming rank 1", err)
	}
	if limit := cfg.HeartbeatTimeout + 2*time.Second; took > limit {
		t.Fatalf("failure took %v, limit %v", took, limit)
	}
	if ev := waitEvent(t, rj, router.EventPeerLost); ev.Peer != fake {
		t.Fatalf("peer lost event %+v", ev)
	}
	waitEvent(t, rj, router.EventFailed)
}

// TestSilentRemoteAcceptor: the agent of rank 1 accepts the link, then never
// answers a ping. The blocked rank 0 fails within the heartbeat timeout.
func TestSilentRemoteAcceptor(t *testing.T) {
	cfg := mpitest.FastConfig()
	c := newCluster(t, 1, cfg)
	fake := fakeAgent(t, c)
	opened := make(chan struct{})
	fake.SetStreamHandler(router.ProtocolID, func(s network.Stream) {
		br := bufio.NewReader(s)
		if f, err := proto.ReadFrame(br, proto.MaxControl); err != nil || f.Type() != proto.TypeOpen {
			_ = s.Reset()
			return
		}
		_, _ = s.Write(proto.Accept{Window: 4 << 20, MaxData: 1 << 20}.Encode())
		close(opened)
		for { // read everything, answer nothing
			if _, err := proto.ReadFrame(br, 1<<21); err != nil {
				return
			}
		}
	})
	rj, _, errc := silentJob(t, c, fake)
	rj.Release()
	<-opened
	checkLost(t, rj, fake.ID(), cfg, time.Now(), errc)
}

// TestSilentRemoteOpener: the agent of rank 1 opens its link, then never
// pings; the receiving side notices.
func TestSilentRemoteOpener(t *testing.T) {
	cfg := mpitest.FastConfig()
	c := newCluster(t, 1, cfg)
	fake := fakeAgent(t, c)
	fake.SetStreamHandler(router.ProtocolID, func(s network.Stream) {
		_ = s.Reset() // refuse the router's own link: only the fake's counts
	})
	rj, _, errc := silentJob(t, c, fake)
	s, err := fake.NewStream(ctxFor(t, 5*time.Second), c.Hosts[0].ID(), router.ProtocolID)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Reset()
	if _, err := s.Write(proto.Open{Version: proto.Version, Job: "silent", Key: "k"}.Encode()); err != nil {
		t.Fatal(err)
	}
	if f, err := proto.ReadFrame(bufio.NewReader(s), proto.MaxControl); err != nil || f.Type() != proto.TypeAccept {
		t.Fatalf("open: %v", err)
	}
	start := time.Now()
	checkLost(t, rj, fake.ID(), cfg, start, errc)
}

// TestLinkOpenRefused: a link open with a wrong key, or from a peer that
// runs no rank of the job, is refused.
func TestLinkOpenRefused(t *testing.T) {
	c := newCluster(t, 2, mpitest.FastConfig())
	j, err := c.AddJob(2, mpitest.RoundRobin(2))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Remove()
	stranger := fakeAgent(t, c)
	for name, tc := range map[string]struct {
		from host.Host
		key  string
		code uint8
	}{
		"wrong key": {c.Hosts[1], "guess", proto.RefuseKey},
		"stranger":  {stranger, j.Key, proto.RefuseMember},
	} {
		s, err := tc.from.NewStream(ctxFor(t, 5*time.Second), c.Hosts[0].ID(), router.ProtocolID)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = s.Write(proto.Open{Version: proto.Version, Job: j.ID, Key: tc.key}.Encode())
		f, err := proto.ReadFrame(bufio.NewReader(s), proto.MaxControl)
		_ = s.Reset()
		if err != nil || f.Type() != proto.TypeRefused {
			t.Errorf("%s: %v, frame %v", name, err, f)
			continue
		}
		if r, _ := proto.DecodeRefused(f.Body()); r.Code != tc.code {
			t.Errorf("%s: refusal %+v", name, r)
		}
	}
	if err := j.Jobs[0].Err(); err != nil {
		t.Errorf("refused opens harmed the job: %v", err)
	}
}

// TestAgentCrash: the host of one agent disappears mid-run (no goodbye);
// the ranks blocked on the other agent fail within a bounded time.
func TestAgentCrash(t *testing.T) {
	cfg := mpitest.FastConfig()
	c := newCluster(t, 2, cfg)
	j, err := c.AddJob(4, mpitest.RoundRobin(2))
	if err != nil {
		t.Fatal(err)
	}
	start := make(chan time.Time, 1)
	errs := j.Run(ctxFor(t, 20*time.Second), func(cm *mpi.Comm) error {
		if err := cm.Barrier(); err != nil {
			return err
		}
		if cm.Rank() == 1 { // on agent 1
			start <- time.Now()
			_ = c.Hosts[1].Close()
		}
		_, err := mpi.Recv(cm, make([]byte, 1), mpi.AnySource, 5)
		return err
	})
	t0 := <-start
	for _, r := range []int{0, 2} { // the ranks on agent 0
		var je *mpi.JobError
		if !errors.As(errs[r], &je) || je.Cause != "agent lost" {
			t.Errorf("rank %d: %v, want agent lost", r, errs[r])
		}
	}
	if took, limit := time.Since(t0), cfg.HeartbeatTimeout+2*time.Second; took > limit {
		t.Errorf("failure took %v, limit %v", took, limit)
	}
}

// TestLinkGarbage: an agent of one job that sends an oversized frame, then
// (on a second job) garbage, loses its streams and fails only those jobs;
// a job between two other agents keeps running.
func TestLinkGarbage(t *testing.T) {
	c := newCluster(t, 2, mpitest.FastConfig())
	busy, err := c.AddJob(2, mpitest.RoundRobin(2))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []error, 1)
	go func() { done <- busy.Run(ctxFor(t, 20*time.Second), pingPong(1000)) }()

	fake := fakeAgent(t, c)
	fake.SetStreamHandler(router.ProtocolID, func(s network.Stream) { _ = s.Reset() })
	for i, payload := range [][]byte{
		{0xff, 0xff, 0xff, 0x7f, proto.TypeMsg}, // a 2 GiB frame
		[]byte("\x09\x00\x00\x00\x04not a msg"), // a MSG too short for its header
	} {
		id := fmt.Sprintf("victim-%d", i)
		rj, err := c.Routers[0].AddJob(router.JobSpec{ID: id, Key: "k", Size: 2, Replicas: 1,
			Table: jobproto.RankTableOf([][]peer.ID{{c.Hosts[0].ID()}, {fake.ID()}}, nil), Local: []router.Proc{{Rank: 0}}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := fake.NewStream(ctxFor(t, 5*time.Second), c.Hosts[0].ID(), router.ProtocolID)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = s.Write(proto.Open{Version: proto.Version, Job: id, Key: "k"}.Encode())
		if f, err := proto.ReadFrame(bufio.NewReader(s), proto.MaxControl); err != nil || f.Type() != proto.TypeAccept {
			t.Fatalf("open: %v", err)
		}
		_, _ = s.Write(payload)
		if ev := waitEvent(t, rj, router.EventPeerLost); ev.Peer != fake.ID() {
			t.Errorf("payload %d: peer lost event %+v", i, ev)
		}
		_ = s.Reset()
		c.Routers[0].RemoveJob(id)
	}
	noErrors(t, <-done)
}
