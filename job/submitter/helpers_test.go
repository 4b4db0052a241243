package submitter

import (
	"math/rand/v2"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// realPeers makes n valid peer IDs from a seeded source, since records
// carry peer IDs that must parse back.
func realPeers(t testing.TB, n int) []peer.ID {
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
