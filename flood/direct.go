package flood

import (
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
)

// MaxDirect bounds the peers one Direct call sends to.
const MaxDirect = 64

// Direct signs a and sends it to each of peers (this peer excepted) with
// TTL 1, as a flood's last hop: each delivers it to its worker, unless it
// has had the advert already, and forwards it to nobody. A submitter
// uses it for the few peers its overlay knows that a flood has not
// reached, rather than flood one more radius, which every agent already
// reached forwards again to all its neighbours (a few thousand messages
// for a handful of agents at the edge of a 350-agent net). It returns
// once the sends are queued; a full queue drops and counts them.
func (f *Flooder) Direct(ctx context.Context, a Advert, peers []peer.ID) error {
	if f.ctx.Err() != nil {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("flood %s: %w", a.Job, err)
	}
	if len(peers) > MaxDirect {
		return fmt.Errorf("flood %s: %d direct peers, limit %d", a.Job, len(peers), MaxDirect)
	}
	a, err := prepare(a, f.h.ID(), f.h.Addrs(), f.key, f.cfg)
	if err != nil {
		return err
	}
	msg, err := encodeMessage(a.env, 1)
	if err != nil {
		return err
	}
	for _, p := range peers {
		if p == f.h.ID() {
			continue
		}
		select {
		case f.sendQ <- sendJob{to: p, msg: msg}:
			f.stats.direct.Add(1)
		default:
			f.stats.drop(DropQueueFull)
		}
	}
	return nil
}
