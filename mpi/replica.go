package mpi

import (
	"fmt"
	"sync"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// Replicated ranks. When a job runs r copies of each rank (zorilla submit
// -r), every copy runs the program and must compute exactly what the others
// do, so that any of them can carry on alone. Where MPI lets the library
// choose — which message a receive from AnySource takes, whether Iprobe or
// Test finds something yet, what Probe(AnySource) finds — the lead copy
// chooses and its agent tells the backups, whose library takes the same
// choice (numbered in program order). A backup therefore waits at such a
// call until its lead has made it; when the lead is lost the next copy
// leads and chooses for itself from then on.
//
// What the program must do itself: make those calls from one goroutine (or
// in an order that does not depend on timing), and keep everything else
// deterministic — no clocks, random numbers without a fixed seed, or
// files and environment that differ between hosts in what it computes or
// sends.

// replication is a replicated copy's side of the agreement.
type replication struct {
	mu      sync.Mutex // guards everything below
	lead    bool
	own     bool                    // it has chosen on its own: a late choice of the old lead no longer counts
	next    uint64                  // number of the next choice, in program order
	floor   uint64                  // choices below it were all taken
	got     map[uint64]proto.Decide // the lead's choices not taken yet
	changed chan struct{}           // closed (and replaced) when got or lead changes
}

// role handles a Role frame from the agent.
func (s *Session) role(body []byte) error {
	m, err := proto.DecodeRole(body)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	if m.Replicas < 2 {
		return nil
	}
	s.repOnce.Do(func() {
		s.rep = &replication{got: map[uint64]proto.Decide{}, changed: make(chan struct{})}
	})
	rep := s.rep
	rep.mu.Lock()
	rep.lead = rep.lead || m.Lead // a copy that leads never stops leading
	rep.signal()
	rep.mu.Unlock()
	return nil
}

// decided handles a Decide frame: a choice of this rank's lead.
func (s *Session) decided(body []byte) error {
	d, err := proto.DecodeDecide(body)
	if err != nil || s.rep == nil {
		return fmt.Errorf("%w: decide: %v", ErrProtocol, err)
	}
	rep := s.rep
	rep.mu.Lock()
	if d.Num >= rep.floor && !rep.own { // a repeat of a choice taken, or a late one from a lost lead, is dropped
		rep.got[d.Num] = d
		rep.signal()
	}
	rep.mu.Unlock()
	return nil
}

func (rep *replication) signal() {
	close(rep.changed)
	rep.changed = make(chan struct{})
}

// choice numbers the next choice of this copy: mine reports that this copy
// makes it (it leads, or it is not replicated); otherwise d is its lead's.
// A backup waits here until its lead has chosen, or it leads itself.
func (s *Session) choice(kind uint8) (num uint64, d proto.Decide, mine bool, err error) {
	rep := s.rep
	if rep == nil {
		return 0, d, true, nil
	}
	rep.mu.Lock()
	num = rep.next
	rep.next++
	for {
		if got, ok := rep.got[num]; ok && !rep.own {
			delete(rep.got, num)
			rep.taken(num)
			rep.mu.Unlock()
			if got.Kind != kind {
				return num, got, false, fmt.Errorf("%w: the lead's choice %d is of kind %d, this call is of kind %d (the copies diverged)",
					ErrProtocol, num, got.Kind, kind)
			}
			return num, got, false, nil
		}
		if rep.lead {
			// From the first choice it makes itself, a new lead's
			// choices are its own: a late one of the lost lead could
			// belong to another path through the program.
			rep.own = true
			clear(rep.got)
			rep.taken(num)
			rep.mu.Unlock()
			return num, d, true, nil
		}
		ch := rep.changed
		rep.mu.Unlock()
		select {
		case <-ch:
		case <-s.dead:
			return num, d, false, s.deadErr()
		}
		rep.mu.Lock()
	}
}

// taken moves the floor past num when every choice below was taken;
// rep.mu is held.
func (rep *replication) taken(num uint64) {
	if num == rep.floor {
		rep.floor++
	}
}

// tell sends this lead copy's choice to its agent, for the backups. It is
// queued in order with the copy's messages, so nothing the program sends
// after the choice can leave before it.
func (s *Session) tell(num uint64, kind uint8, found bool, src, tag int) {
	if s.rep == nil {
		return
	}
	s.postFrame(proto.Decide{Num: num, Kind: kind, Found: found, Src: int32(src), Tag: int32(tag)}.Encode())
}
