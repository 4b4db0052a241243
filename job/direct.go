package job

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
)

// Director sends an advert straight to a few peers, each as a flood's last
// hop (flood.Flooder.Direct). An Advertiser that is one lets the submitter
// reach the last peers its overlay knows without flooding a wider radius.
type Director interface {
	Direct(ctx context.Context, a flood.Advert, to []peer.ID) error
}

// defaultDirect is SubmitterConfig.Direct of a real agent.
const defaultDirect = 16

// directTargets is whom the advert may go to directly once a radius is
// answered: the live peers the overlay knows that have not answered and,
// once the offers are enough, only those that can change the placement
// (ExtraWorthFor's: closer than the plan's farthest host under PreferRTT,
// any under another preference).
func directTargets(p Preference, enough bool, farthest time.Duration, known []PeerRTT, heard func(peer.ID) bool) []peer.ID {
	byRTT := p == "" || p == PreferRTT
	var out []peer.ID
	for _, k := range known {
		switch {
		case k.Dead || heard(k.ID):
		case enough && byRTT && !closerThan(k, farthest):
		default:
			out = append(out, k.ID)
		}
	}
	return out
}

// canDirect reports whether the targets may have the advert directly
// instead of a wider flood: there are some, at most limit, none has had
// it directly before (a target that did not answer that is left to the
// flood), and the overlay knew every peer it knows when the flood began
// (stable): a peer it does not know is then farther than all it knows,
// and a wider radius can bring no closer host than the targets.
func canDirect(targets []peer.ID, sent map[peer.ID]bool, limit int, stable bool) bool {
	if !stable || len(targets) == 0 || len(targets) > limit {
		return false
	}
	for _, p := range targets {
		if sent[p] {
			return false
		}
	}
	return true
}

// directWait is how long from now the answers to the direct advert are
// still waited for: until directBy, unless every target has answered.
func (rs *reservation) directWait(now time.Time) (time.Duration, bool) {
	if !now.Before(rs.directBy) {
		return 0, false
	}
	for _, p := range rs.targets {
		if !rs.heard[p] {
			return rs.directBy.Sub(now), true
		}
	}
	return 0, false
}

// direct sends the advert to the reservation's targets and notes them as
// sent. Their answers are waited for as long as the last radius that
// brought answers took to bring its last: one hop is no slower than that.
func (ss *session) direct(ctx context.Context, adv flood.Advert, rs *reservation) {
	for _, p := range rs.targets {
		rs.sent[p] = true
	}
	rs.held = true
	rs.directBy = time.Now().Add(max(rs.wait(), rs.took))
	d, _ := ss.s.flood.(Director)
	if err := d.Direct(ctx, adv, rs.targets); err != nil {
		log.Infow("direct advert not sent", "job", ss.id, "peers", len(rs.targets), "err", err)
		rs.directBy = time.Now() // the next look floods the next radius
	}
	log.Debugw("advert sent directly", "job", ss.id, "radius", rs.radius, "peers", len(rs.targets))
}

// directLimit is how many peers a job may send its advert to directly at
// once: the config's, within flood.MaxDirect; 0 when the Advertiser cannot.
func (s *Submitter) directLimit() int {
	if _, ok := s.flood.(Director); !ok {
		return 0
	}
	return max(0, min(s.cfg.Direct, flood.MaxDirect))
}
