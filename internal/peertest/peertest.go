// Package peertest gives tests valid libp2p peer IDs that do not change
// from run to run: records and messages carry peer IDs that must parse
// back, and a table test's expected output names them.
package peertest

import (
	"math/rand/v2"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Peers makes n valid peer IDs from a seeded source: the same n IDs, in
// the same order, on every call.
func Peers(t testing.TB, n int) []peer.ID {
	t.Helper()
	rng := rand.NewChaCha8([32]byte{7})
	out := make([]peer.ID, n)
	for i := range out {
		_, pub, err := crypto.GenerateEd25519Key(rng)
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = peer.IDFromPublicKey(pub); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
