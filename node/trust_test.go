package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/worker"
)

func newPeerID(t *testing.T) peer.ID {
	t.Helper()
	_, pub, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// decide is what the agent's policy says to an advert of one process from
// submitter.
func decide(n *Node, submitter peer.ID) worker.Decision {
	return worker.Decide(n.Leases().Policy(), worker.Usage{}, submitter, proto.Need{Job: "j1", N: 1, R: 1})
}

// Trust by default: with no list an agent runs only its own jobs. Edits
// through the API are written to <data-dir>/allow and deny and are in force
// at once; a hand edit is in force after a reload; a broken file on reload
// keeps the lists in force; deny beats allow.
func TestTrustByDefaultEditAndReload(t *testing.T) {
	dir := shortDir(t)
	n := startNode(t, testConfig(dir))
	alice, bob := newPeerID(t), newPeerID(t)
	if d := decide(n, alice); d.Accept || d.Code != proto.DeclinePolicy {
		t.Fatalf("a stranger was not refused by default: %+v", d)
	}
	if d := decide(n, n.ID()); !d.Accept {
		t.Fatalf("the agent refused its own job: %+v", d)
	}
	cl, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	info, err := cl.EditTrust(ctx, TrustEdit{Op: "add", List: ListAllow, Peer: alice})
	if err != nil || !slices.Equal(info.Allow, []peer.ID{alice}) || info.AllowFile != filepath.Join(dir, AllowFileName) {
		t.Fatalf("add: %+v, %v", info, err)
	}
	if d := decide(n, alice); !d.Accept {
		t.Fatalf("alice refused after trust add: %+v", d)
	}
	if b, err := os.ReadFile(filepath.Join(dir, AllowFileName)); err != nil || string(b) != alice.String()+"\n" {
		t.Fatalf("allow file %q, %v", b, err)
	}
	if _, err := cl.EditTrust(ctx, TrustEdit{Op: "add", List: ListDeny, Peer: alice}); err != nil {
		t.Fatal(err)
	}
	if d := decide(n, alice); d.Accept || d.Code != proto.DeclinePolicy {
		t.Fatalf("deny did not beat allow: %+v", d)
	}
	// A hand edit is read on reload.
	if err := os.WriteFile(filepath.Join(dir, DenyFileName), []byte("# nobody\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, AllowFileName), []byte(alice.String()+"\n"+bob.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if d := decide(n, bob); d.Accept {
		t.Fatal("a hand edit took effect before the reload")
	}
	if info, err = cl.ReloadTrust(ctx); err != nil || len(info.Allow) != 2 || len(info.Deny) != 0 {
		t.Fatalf("reload: %+v, %v", info, err)
	}
	if !decide(n, alice).Accept || !decide(n, bob).Accept {
		t.Fatal("the reloaded lists are not in force")
	}
	// A broken file: the reload fails and the lists in force stay.
	if err := os.WriteFile(filepath.Join(dir, AllowFileName), []byte("not a peer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var apiErr *APIError
	if _, err := cl.ReloadTrust(ctx); !errors.As(err, &apiErr) || apiErr.Status != 422 {
		t.Fatalf("reload of a broken file: %v", err)
	}
	if !decide(n, bob).Accept || len(n.Trust().Allow) != 2 {
		t.Fatal("a failed reload changed the lists in force")
	}
	// An edit of a broken file is refused and leaves it as it is.
	if _, err := cl.EditTrust(ctx, TrustEdit{Op: "remove", List: ListAllow, Peer: bob}); err == nil {
		t.Fatal("edited a file that does not parse")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, AllowFileName)); string(b) != "not a peer\n" {
		t.Fatalf("the broken file was changed: %q", b)
	}
}

// Bad requests to the trust API get a 400 and change nothing.
func TestTrustAPIBadInput(t *testing.T) {
	dir := shortDir(t)
	n := startNode(t, testConfig(dir))
	cl, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	alice := newPeerID(t)
	for name, body := range map[string]any{
		"op":        TrustEdit{Op: "grant", List: ListAllow, Peer: alice},
		"list":      TrustEdit{Op: "add", List: "maybe", Peer: alice},
		"no peer":   TrustEdit{Op: "add", List: ListAllow},
		"bad peer":  map[string]string{"op": "add", "list": "allow", "peer": "not-a-peer"},
		"unknown":   map[string]string{"op": "add", "list": "allow", "peer": alice.String(), "x": "1"},
		"not json":  "just a string",
		"too large": map[string]string{"op": string(make([]byte, 2*maxTrustEdit))},
	} {
		var apiErr *APIError
		if err := cl.Do(context.Background(), "POST", "/v1/trust", body, nil); !errors.As(err, &apiErr) || apiErr.Status != 400 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if info := n.Trust(); len(info.Allow)+len(info.Deny) != 0 {
		t.Fatalf("bad requests changed the lists: %+v", info)
	}
	if _, err := os.Stat(filepath.Join(dir, AllowFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("bad requests wrote the allow file: %v", err)
	}
}

// With --open every submitter not denied is accepted; the allow list is
// kept but not applied.
func TestTrustOpen(t *testing.T) {
	cfg := testConfig(shortDir(t))
	cfg.Open = true
	n := startNode(t, cfg)
	alice := newPeerID(t)
	if d := decide(n, alice); !d.Accept {
		t.Fatalf("open agent refused a stranger: %+v", d)
	}
	if _, err := n.EditTrust(TrustEdit{Op: "add", List: ListDeny, Peer: alice}); err != nil {
		t.Fatal(err)
	}
	if d := decide(n, alice); d.Accept {
		t.Fatal("open agent accepted a denied submitter")
	}
}
