package submitter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// advertised is an Advertiser that reports each reservation's advert (its
// first radius) and floods nothing: the tests' workers offer on their own.
type advertised chan string

func (a advertised) Flood(ctx context.Context, ad flood.Advert, r int) error {
	if r == 1 {
		select {
		case a <- ad.Job:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (a advertised) MaxTTL() int { return flood.HardMaxTTL }

// slowPing answers every peer at once with 1 ms, but the slow one after
// delay.
type slowPing struct {
	slow  peer.ID
	delay time.Duration
}

func (p slowPing) Ping(ctx context.Context, to peer.ID) (time.Duration, error) {
	if to != p.slow {
		return time.Millisecond, nil
	}
	t := time.NewTimer(p.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return 5 * time.Millisecond, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// A spread job over more processes than the network has hosts is placed
// once a whole radius brings no new offer. An offer that has reached the
// submitter while its sender is still being measured is not "no new
// offer": here one host's RTT takes longer to measure than several radii,
// and it must still be in the plan. (Placed without it, the full-size
// Grid'5000 run used 348 of its 350 hosts for spread n = 550.)
func TestSpreadWaitsForOffersBeingMeasured(t *testing.T) {
	const workers, slots = 4, 4
	cfg := DefaultConfig()
	cfg.Schedule = flood.Schedule{First: 50 * time.Millisecond, Factor: 2, MaxRadius: 8}
	cfg.OfferGrace = 50 * time.Millisecond
	var slow peer.ID
	m := newMockSubmitter(t, workers, cfg, func(hosts []host.Host) Pinger {
		slow = hosts[workers].ID()
		return slowPing{slow: slow, delay: 600 * time.Millisecond}
	})
	hosts, subHost, sub, prog, ads := m.hosts, m.hosts[0], m.sub, m.prog, m.ads

	// The workers: each answers lease requests and offers its slots
	// once the job is advertised.
	for _, w := range hosts[1:] {
		answerLeases(t, w, nil)
	}
	d := job.NewDescription("hostname.sh", nil, 2*workers) // more processes than hosts (spread waits for an empty radius), fewer than three hosts hold
	d.Strategy = job.Spread
	id, err := sub.Submit(Submission{Desc: d, Program: prog, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	advertisedJob := <-ads
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	offered := make(chan error, workers)
	for i, w := range hosts[1:] {
		go func() {
			wep := rpc.New(w)
			defer wep.Close()
			var reply proto.OfferReply
			msg := proto.OfferMsg{Job: job.ID(advertisedJob), Lease: fmt.Sprintf("lease-%d", i), Slots: slots, Cores: slots, Expires: time.Now().Add(time.Minute)}
			err := wep.Call(ctx, subHost.ID(), proto.OfferProtocol, msg, &reply, proto.MaxReplySize)
			if err == nil && !reply.Keep {
				err = fmt.Errorf("not kept: %s", reply.Reason)
			}
			offered <- err
		}()
	}
	end, err := watchEnd(ctx, sub, id)
	if err != nil || end == nil || end.Plan == nil {
		t.Fatalf("watch: %v; record %+v", err, end)
	}
	for i := range workers {
		if err := <-offered; err != nil {
			t.Errorf("offer %d of %d: %v", i+1, workers, err)
		}
	}
	var used []peer.ID
	for _, hp := range end.Plan.Hosts {
		used = append(used, hp.Offer.Peer)
	}
	if len(used) != workers || !slices.Contains(used, slow) {
		t.Fatalf("spread of %d processes over %d hosts placed on %d hosts (the slowly measured one included: %v)",
			d.Nodes, workers, len(used), slices.Contains(used, slow))
	}
}

// storeAndProgram makes a job store and a blob store in temporary folders,
// with a program in the blob store.
func storeAndProgram(t *testing.T) (*job.Store, *blob.Store, proto.FileRef) {
	t.Helper()
	store, err := job.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := blob.New(blob.DefaultConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	h, size, err := blobs.Put(strings.NewReader("#!/bin/sh\nhostname\n"), 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	return store, blobs, proto.FileRef{Name: "hostname.sh", Hash: h.String(), Size: size}
}

// watchEnd follows job id on sub until it ends and returns its last
// record (nil if no end came).
func watchEnd(ctx context.Context, sub *Submitter, id job.ID) (*job.Record, error) {
	var end *job.Record
	err := sub.Watch(ctx, id, 0, func(u job.Update) error {
		if u.Kind == "end" {
			end = u.Record
		}
		return nil
	})
	return end, err
}

// mockSubmitter is a submitter on the first host of a mocknet of 1 +
// workers hosts, with its stores, a program, and the jobs it advertises.
type mockSubmitter struct {
	hosts []host.Host
	sub   *Submitter
	store *job.Store
	prog  proto.FileRef
	ads   advertised
}

// newMockSubmitter starts it under cfg; ping, when not nil, makes the
// submitter's RTT source from the hosts (slowPing{} otherwise).
func newMockSubmitter(t *testing.T, workers int, cfg Config, ping func([]host.Host) Pinger) mockSubmitter {
	t.Helper()
	mn, err := mocknet.FullMeshConnected(1 + workers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mn.Close() })
	m := mockSubmitter{hosts: mn.Hosts(), ads: make(advertised, 1)}
	store, blobs, prog := storeAndProgram(t)
	m.store, m.prog = store, prog
	var p Pinger = slowPing{}
	if ping != nil {
		p = ping(m.hosts)
	}
	ep := rpc.New(m.hosts[0])
	t.Cleanup(func() { _ = ep.Close() })
	if m.sub, err = New(m.hosts[0], ep, cfg, m.ads, p, blobs, store); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.sub.Close() })
	return m
}
