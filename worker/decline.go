package worker

import (
	"context"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	ma "github.com/multiformats/go-multiaddr"
	"golang.org/x/time/rate"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// maxToldJobs bounds the jobs a worker remembers having declined, so it
// tells each submitter once per job, not once per radius.
const maxToldJobs = 1024

// decliner decides whether a decline may be sent: once per job (the most
// recent maxToldJobs), and at most DeclineRate per second in all, so a
// flood of adverts cannot make the worker open a flood of streams. Its
// lock is held only for the bookkeeping, never across I/O.
type decliner struct {
	lim *rate.Limiter

	mu    sync.Mutex
	told  map[string]bool
	order []string // told, oldest first
}

func newDecliner(perSecond float64, burst int) *decliner {
	return &decliner{lim: rate.NewLimiter(rate.Limit(perSecond), burst), told: map[string]bool{}}
}

// claim reports whether a decline keyed j (a job, or a yield's lease and
// contender) may be sent now, and if so remembers that it was.
func (d *decliner) claim(j string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.told[j] || !d.lim.Allow() {
		return false
	}
	if len(d.order) >= maxToldJobs {
		delete(d.told, d.order[0])
		d.order = d.order[1:]
	}
	d.told[j], d.order = true, append(d.order, j)
	return true
}

// decline tells the submitter of advert a why this worker makes no offer
// for job j, when the decliner lets it. Best effort: a decline that cannot
// be delivered is only logged.
func (s *Service) decline(a flood.Advert, j proto.JobID, d Decision) {
	// Once per flood key, not per job: a job flooded again (a restart)
	// is answered again, else its new reservation hears nothing from
	// this host and may count the network exhausted (the submitter's Hopeless rule).
	if d.Code == "" || !s.declines.claim(a.Job) {
		return
	}
	detail := d.Detail
	if len(detail) > proto.MaxDeclineDetail {
		detail = detail[:proto.MaxDeclineDetail]
	}
	s.tell(a.Submitter, a.Addrs, proto.DeclineMsg{Job: j, Code: d.Code, Detail: detail})
}

// tell sends one DeclineMsg to a submitter. Best effort: one that cannot
// be delivered is only logged.
func (s *Service) tell(to peer.ID, addrs []ma.Multiaddr, msg proto.DeclineMsg) {
	if to != s.h.ID() && len(addrs) > 0 {
		s.h.Peerstore().AddAddrs(to, addrs, peerstore.TempAddrTTL)
	}
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	st, err := s.ep.Open(ctx, to, proto.DeclineProtocol)
	if err != nil {
		log.Debugw("decline not sent", "job", msg.Job, "code", msg.Code, "err", err)
		return
	}
	stop := context.AfterFunc(ctx, func() { _ = st.Reset() })
	defer stop()
	if err := wire.WriteJSON(st, msg); err != nil {
		_ = st.Reset()
		return
	}
	_ = st.Close()
}
