package node

import (
	"fmt"

	"github.com/libp2p/go-libp2p"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/internal/linkdelay"
)

// testnetDelay reads Config.TestnetDelay: nil when it is empty. The delay
// is put on TCP only, so it refuses QUIC listen addresses.
func testnetDelay(c Config) (*linkdelay.Table, error) {
	if len(c.TestnetDelay) == 0 {
		return nil, nil
	}
	t, err := linkdelay.ParseTable(c.TestnetDelay)
	if err != nil {
		return nil, fmt.Errorf("testnet delay: %w", err)
	}
	for _, s := range c.Listen {
		if a, err := ma.NewMultiaddr(s); err == nil && usesUDP(a) {
			return nil, fmt.Errorf("testnet delay is put on TCP only, and QUIC would pass undelayed: listen on TCP only, not on %q", s)
		}
	}
	return t, nil
}

func usesUDP(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_UDP)
	return err == nil
}

// transports are the host's: TCP and QUIC; or, with a testnet delay, TCP
// alone with its connections delayed by the table, so that neither a
// dial nor an answer goes around the delay over QUIC.
func transports(c Config) ([]libp2p.Option, error) {
	t, err := testnetDelay(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if t == nil {
		return []libp2p.Option{libp2p.Transport(tcp.NewTCPTransport), libp2p.Transport(quic.NewTransport)}, nil
	}
	log.Infow("testnet delay on: TCP only, sends delayed by subnet", "rules", c.TestnetDelay)
	return []libp2p.Option{libp2p.Transport(linkdelay.TCPTransport(t))}, nil
}
