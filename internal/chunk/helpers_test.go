package chunk

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
)

const testKey = "secret"

// agent is one chunk service on a mocknet host with its own blob store.
type agent struct {
	h     host.Host
	ep    *rpc.Endpoint
	blobs *blob.Store
	svc   *Service
	dir   string
}

// swarm starts n agents on a connected mocknet; agent 0 is the owner,
// granting testKey's requests as owner, the others as peers.
func swarm(t *testing.T, n int, cfg Config) []*agent {
	t.Helper()
	mn, err := mocknet.FullMeshConnected(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mn.Close() })
	var out []*agent
	for i, h := range mn.Hosts() {
		a := &agent{h: h, ep: rpc.New(h), dir: t.TempDir()}
		t.Cleanup(func() { _ = a.ep.Close() })
		a.blobs, err = blob.New(blob.DefaultConfig(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		a.svc, err = New(a.ep, a.blobs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		owner := i == 0
		a.svc.Allow(func(id, key string, _ blob.Hash, _ peer.ID) (bool, bool) {
			return id == "job" && key == testKey, owner
		})
		out = append(out, a)
	}
	return out
}

// testConfig is DefaultConfig with a patience no test may rely on.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Patience = time.Minute
	return cfg
}

// putRandom stores size random bytes at a and returns them and their hash.
func putRandom(t *testing.T, a *agent, size int) ([]byte, blob.Hash) {
	t.Helper()
	b := make([]byte, size)
	_, _ = rand.Read(b)
	h, _, err := a.blobs.Put(bytes.NewReader(b), 0)
	if err != nil {
		t.Fatal(err)
	}
	return b, h
}

// fetchOf is the Fetch of file h by a, in a job whose hosts are hosts.
func fetchOf(a *agent, owner *agent, h blob.Hash, hosts []*agent) Fetch {
	f := Fetch{Job: "job", Key: testKey, Hash: h, Limit: 1 << 30, Owner: owner.h.ID(), Dir: a.dir}
	for _, x := range hosts {
		f.Hosts = append(f.Hosts, x.h.ID())
	}
	return f
}

// checkHeld fails unless a's store holds exactly want under h.
func checkHeld(t *testing.T, a *agent, h blob.Hash, want []byte) {
	t.Helper()
	rc, _, err := a.blobs.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got bytes.Buffer
	if _, err := got.ReadFrom(rc); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("agent holds %d bytes, not the %d bytes put", got.Len(), len(want))
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
