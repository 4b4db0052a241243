package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/wire"
)

// LinksProtocol is how the view asks a neighbour for its own links: the
// asker sends nothing, the answerer one frame of JSON (Self) and closes.
const LinksProtocol = "/zorilla/links/1.0.0"

// Bounds of the links protocol.
const (
	maxLinksFrame = 32 << 10
	maxLinks      = 64  // links in one answer
	maxLabels     = 64  // labels in one answer
	maxLabelLen   = 256 // bytes of one label
	maxServing    = 8   // answers served at once; more are reset
	linksTimeout  = 3 * time.Second
)

// Link is one peer as an agent sees it.
type Link struct {
	Peer      string  `json:"peer"`
	RTTms     float64 `json:"rtt_ms"`         // smoothed round trip; 0 until measured
	Conn      string  `json:"conn,omitempty"` // direct, relayed or none
	Neighbour bool    `json:"neighbour,omitempty"`
	Dead      bool    `json:"dead,omitempty"`
}

// Self is what an agent says of itself: its labels and the peers it knows
// (its neighbours first).
type Self struct {
	Labels []string `json:"labels"`
	Links  []Link   `json:"links"`
}

// decodeSelf decodes and checks an answer of the links protocol.
func decodeSelf(b []byte) (Self, error) {
	var s Self
	if len(b) > maxLinksFrame {
		return s, fmt.Errorf("web: links answer of %d bytes exceeds %d", len(b), maxLinksFrame)
	}
	if err := wire.DecodeJSON(b, &s); err != nil {
		return s, fmt.Errorf("web: decode links: %w", err)
	}
	if len(s.Links) > maxLinks || len(s.Labels) > maxLabels {
		return Self{}, fmt.Errorf("web: %d links and %d labels exceed %d and %d", len(s.Links), len(s.Labels), maxLinks, maxLabels)
	}
	for _, l := range s.Labels {
		if len(l) > maxLabelLen {
			return Self{}, fmt.Errorf("web: label of %d bytes exceeds %d", len(l), maxLabelLen)
		}
	}
	for i, l := range s.Links {
		if _, err := peer.Decode(l.Peer); err != nil {
			return Self{}, fmt.Errorf("web: link %d: peer %q: %w", i, l.Peer, err)
		}
		if l.RTTms < 0 || l.RTTms > 1e6 || l.RTTms != l.RTTms {
			return Self{}, fmt.Errorf("web: link %d: RTT %v ms out of range", i, l.RTTms)
		}
	}
	return s, nil
}

// trim bounds s to what an answer may hold, neighbours first.
func (s Self) trim() Self {
	s.Links = s.Links[:min(len(s.Links), maxLinks)]
	s.Labels = s.Labels[:min(len(s.Labels), maxLabels)]
	for i, l := range s.Labels {
		if len(l) > maxLabelLen {
			s.Labels[i] = l[:maxLabelLen]
		}
	}
	return s
}

// ServeLinks answers LinksProtocol on h with what self returns, until the
// returned stop is called.
func ServeLinks(h host.Host, self func() Self) (stop func()) {
	slots := make(chan struct{}, maxServing)
	h.SetStreamHandler(LinksProtocol, func(s network.Stream) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		default:
			_ = s.Reset()
			return
		}
		_ = s.SetDeadline(time.Now().Add(linksTimeout))
		b, err := json.Marshal(self().trim())
		if err == nil {
			err = wire.WriteFrame(s, b)
		}
		if err != nil {
			_ = s.Reset()
			return
		}
		_ = s.Close()
	})
	return func() { h.RemoveStreamHandler(LinksProtocol) }
}

// AskLinks asks p for its links.
func AskLinks(ctx context.Context, h host.Host, p peer.ID) (Self, error) {
	ctx, cancel := context.WithTimeout(ctx, linksTimeout)
	defer cancel()
	s, err := h.NewStream(ctx, p, LinksProtocol)
	if err != nil {
		return Self{}, fmt.Errorf("ask %s for its links: %w", p.ShortString(), err)
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	_ = s.SetDeadline(time.Now().Add(linksTimeout))
	_ = s.CloseWrite()
	b, err := wire.ReadFrame(bufio.NewReader(s), maxLinksFrame)
	if err != nil {
		_ = s.Reset()
		return Self{}, fmt.Errorf("ask %s for its links: %w", p.ShortString(), err)
	}
	_ = s.Close()
	return decodeSelf(b)
}
