package chunk

import (
	"bufio"
	"context"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
)

// Eight hosts fetching one file at once take each chunk from the owner
// about once and the rest from each other, and all end with the file.
func TestFetchSharesTheUpload(t *testing.T) {
	as := swarm(t, 9, testConfig())
	owner, hosts := as[0], as[1:]
	size := 5*Size + 1234
	want, h := putRandom(t, owner, size)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make([]error, len(hosts))
	for i, a := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = a.svc.Fetch(ctx, fetchOf(a, owner, h, hosts))
		}()
	}
	wg.Wait()
	var fromPeers, fromOwner int64
	for i, a := range hosts {
		if errs[i] != nil {
			t.Fatalf("host %d: %v", i, errs[i])
		}
		checkHeld(t, a, h, want)
		st := a.svc.Stats()
		fromPeers += st.FetchedPeers
		fromOwner += st.FetchedOwner
	}
	served := owner.svc.Stats().ServedAsOwner
	if served != fromOwner || fromOwner+fromPeers != int64(len(hosts)*size) {
		t.Fatalf("owner served %d, hosts took %d from it and %d from peers, want %d in all",
			served, fromOwner, fromPeers, len(hosts)*size)
	}
	// Each chunk has one seed; only a host that timed out (Patience is a
	// minute here) would take a chunk a second time.
	if served != int64(size) {
		t.Fatalf("owner served %d bytes for a file of %d", served, size)
	}
}

// badPeer serves every chunk asked for as size bytes of zeros, or
// (vanish) half a chunk and then a reset, closing its host after.
func badPeer(t *testing.T, a *agent, vanish bool) {
	t.Helper()
	a.ep.Handle(Protocol, func(_ context.Context, _ peer.ID, st rpc.Stream) {
		q, _, err := ReadRequest(bufio.NewReader(st))
		if err != nil || q.Chunk < 0 {
			_ = st.Reset()
			return
		}
		_ = wire.WriteJSON(st, Reply{Size: Size})
		if vanish {
			_, _ = st.Write(make([]byte, Size/2))
			_ = st.Reset()
			go func() { _ = a.h.Close() }()
			return
		}
		_, _ = st.Write(make([]byte, Size))
		_ = st.Close()
	})
}

// A chunk from a peer that does not match the manifest is dropped, the
// peer not asked again, and the chunk fetched elsewhere: the file staged
// is the owner's.
func TestCorruptChunkFetchedElsewhere(t *testing.T) {
	as := swarm(t, 4, testConfig())
	owner, bad, good, other := as[0], as[1], as[2], as[3]
	badPeer(t, bad, false)
	want, h := putRandom(t, owner, 3*Size)
	hosts := []*agent{bad, good, other}
	// other holds the file: good's chunks seeded by bad must come from
	// other or the owner, never from bad.
	if _, err := other.svc.Fetch(testCtx(t), fetchOf(other, owner, h, []*agent{other})); err != nil {
		t.Fatal(err)
	}
	if _, err := good.svc.Fetch(testCtx(t), fetchOf(good, owner, h, hosts)); err != nil {
		t.Fatal(err)
	}
	checkHeld(t, good, h, want)
	if st := good.svc.Stats(); st.CorruptChunks != 1 {
		t.Fatalf("corrupt chunks %d, want 1 (bad is asked once, then never again): %+v", st.CorruptChunks, st)
	}
}

// A peer that disappears in the middle of sending a chunk does not stall
// the fetch: Patience is a minute, the fetch ends long before.
func TestPeerVanishingMidTransfer(t *testing.T) {
	as := swarm(t, 3, testConfig())
	owner, gone, host := as[0], as[1], as[2]
	badPeer(t, gone, true)
	want, h := putRandom(t, owner, 4*Size)
	if _, err := host.svc.Fetch(testCtx(t), fetchOf(host, owner, h, []*agent{gone, host})); err != nil {
		t.Fatal(err)
	}
	checkHeld(t, host, h, want)
	if st := host.svc.Stats(); st.FetchedOwner != 4*Size {
		t.Fatalf("fetched %d bytes from the owner, want the whole file: %+v", st.FetchedOwner, st)
	}
}

// Requests without the job's key, or for no file of a job, are refused
// with an error and change nothing; a fetch that meets a refusal from the
// owner ends with ErrNoManifest, so the worker falls back to a whole fetch.
func TestRefusedRequests(t *testing.T) {
	as := swarm(t, 2, testConfig())
	owner, host := as[0], as[1]
	_, h := putRandom(t, owner, 10)
	f := fetchOf(host, owner, h, []*agent{host})
	f.Key = "wrong"
	if _, err := host.svc.Fetch(testCtx(t), f); !errorsIs(err, ErrNoManifest) {
		t.Fatalf("fetch with a wrong key: %v, want ErrNoManifest", err)
	}
	if host.blobs.Has(h) {
		t.Fatal("a refused fetch stored the file")
	}
	rep, _, err := host.svc.ask(testCtx(t), owner.h.ID(), Fetch{Job: "job", Key: "wrong", Hash: h}, 0)
	if err == nil || rep.Error == "" {
		t.Fatalf("chunk asked with a wrong key: %+v, %v", rep, err)
	}
	rep, _, err = host.svc.ask(testCtx(t), owner.h.ID(), Fetch{Job: "job", Key: testKey, Hash: blob.Sum([]byte("x"))}, 0)
	if err != nil || !rep.Missing {
		t.Fatalf("chunk of a file not held: %+v, %v, want Missing", rep, err)
	}
	f.Key, f.Limit = testKey, 5
	if _, err := host.svc.Fetch(testCtx(t), f); !errorsIs(err, ErrTooLarge) {
		t.Fatalf("fetch over the limit: %v, want ErrTooLarge", err)
	}
}
