package main

import (
	"crypto/ed25519"
	"fmt"

	pb "github.com/libp2p/go-libp2p-kad-dht/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"google.golang.org/protobuf/proto"

	"github.com/zorilla-p2p/zorilla/overlay"
)

// answerBytes is the size of a DHT server's answer to one lookup of the
// key (GET_PROVIDERS) when it holds records providers, encoded by
// go-libp2p-kad-dht: every provider with the two public addresses an
// agent listens on (TCP and QUIC on port 4001), and the bucketSize closer
// peers a server adds.
func answerBytes(records int) int {
	id := peerID()
	addrs := [][]byte{
		ma.StringCast("/ip4/203.0.113.7/tcp/4001").Bytes(),
		ma.StringCast("/ip4/203.0.113.7/udp/4001/quic-v1").Bytes(),
	}
	p := &pb.Message_Peer{Id: []byte(id), Addrs: addrs}
	m := &pb.Message{Type: pb.Message_GET_PROVIDERS, Key: overlay.RendezvousKey("zorilla").Hash()}
	for range records {
		m.ProviderPeers = append(m.ProviderPeers, p)
	}
	for range bucketSize {
		m.CloserPeers = append(m.CloserPeers, p)
	}
	return proto.Size(m)
}

// peerID is an agent's peer ID: an Ed25519 key's, as agents have.
func peerID() peer.ID {
	seed := make([]byte, ed25519.SeedSize)
	pk, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		panic(err)
	}
	id, err := peer.IDFromPrivateKey(pk)
	if err != nil {
		panic(err)
	}
	return id
}

// fmtID names simulated agent i; ProviderDraw hashes it as it would a peer ID.
func fmtID(seed uint64, i int) string { return fmt.Sprintf("agent-%d-%d", seed, i) }
