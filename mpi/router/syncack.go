package router

import (
	"errors"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// Synchronous sends of replicated jobs. A copy of the receiver that matched
// a synchronous message sends SyncAck; a lead's goes, once its choices are
// held, to every live copy of the sender and to the agents of its live
// backups. A backup's is kept until its lead's for the same message comes,
// and sent when the backup takes over, with the latest ones it made (its
// lead's may have reached this agent and not the sender's when the lead was
// lost): so the sender's copies wait until the receiver's lead matched, and
// a copy that takes over acknowledges what its lead may not have.

// syncKey names a synchronous message by its sender and sequence number
// (towards the copy's rank).
type syncKey struct {
	dst uint32 // the rank that sent the message, which the ack goes to
	seq uint64
}

// syncAcks is one local copy's share: while it is a backup, the
// acknowledgements it made that its lead's have not matched yet, and its
// lead's that it has not made yet; and the latest it made (as a backup) or
// sent (as lead), to send again when it takes over or on a new stream.
type syncAcks struct {
	mu     sync.Mutex
	leads  bool
	mine   map[syncKey]bool // true: this backup's own, kept; false: the lead's, came first
	recent []proto.SyncAck  // the latest acknowledgements, at most syncRecent
}

// syncRecent bounds the latest acknowledgements a copy sends again: what
// was in flight when a stream broke or a lead was lost.
const syncRecent = 256

func newSyncAcks() *syncAcks { return &syncAcks{mine: map[syncKey]bool{}} }

// own records the copy's own acknowledgement a while it is a backup.
func (s *syncAcks) own(a proto.SyncAck) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leads {
		return
	}
	s.remember(a)
	k := syncKey{a.Dst, a.Seq}
	if kept, ok := s.mine[k]; ok && !kept {
		delete(s.mine, k) // the lead's came first: nothing to keep
		return
	}
	s.mine[k] = true
}

// fromLead records the lead's acknowledgement.
func (s *syncAcks) fromLead(k syncKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leads {
		return
	}
	if kept, ok := s.mine[k]; ok && kept {
		delete(s.mine, k)
		return
	}
	s.mine[k] = false
}

// lead makes the copy a lead and returns the acknowledgements to send:
// those it kept and the latest it made.
func (s *syncAcks) lead(rank uint32) []proto.SyncAck {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leads = true
	out := append([]proto.SyncAck(nil), s.recent...)
	for k, kept := range s.mine {
		if kept {
			out = append(out, proto.SyncAck{Src: rank, Dst: k.dst, Seq: k.seq})
		}
	}
	clear(s.mine)
	s.recent = s.recent[:0]
	return out
}

// sent remembers an acknowledgement the copy sent as lead.
func (s *syncAcks) sent(a proto.SyncAck) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remember(a)
}

// remember adds a to the latest; s.mu is held.
func (s *syncAcks) remember(a proto.SyncAck) {
	if len(s.recent) == syncRecent {
		s.recent = append(s.recent[:0], s.recent[1:]...)
	}
	s.recent = append(s.recent, a)
}

// latest returns the acknowledgements sent as lead that are remembered.
func (s *syncAcks) latest() []proto.SyncAck {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]proto.SyncAck(nil), s.recent...)
}

var errSyncAckRank = errors.New("sync ack names a rank outside the job")

// syncAckOut handles a SyncAck from local copy pr: forwarded if pr
// transmits, kept otherwise.
func (j *Job) syncAckOut(pr *proc, body []byte) error {
	a, err := proto.DecodeSyncAck(body)
	if err != nil {
		return err
	}
	if int(a.Dst) >= j.spec.Size {
		return errSyncAckRank
	}
	a.Src = uint32(pr.Rank)
	if err := pr.choices.wait(j.ctx); err != nil {
		return err // the match may rest on a choice the backups must hold first
	}
	pr.sendMu.Lock()
	defer pr.sendMu.Unlock()
	if !pr.transmit.Load() {
		pr.syncs.own(a)
		return nil
	}
	j.sendSyncAck(pr, a)
	return nil
}

// sendSyncAck sends lead copy pr's acknowledgement to every live copy of
// the sender and to the agents of pr's live backups.
func (j *Job) sendSyncAck(pr *proc, a proto.SyncAck) {
	pr.syncs.sent(a)
	f := a.Encode()
	var hosts []peer.ID
	j.mu.Lock()
	for _, c := range []Proc{{int(a.Dst), -1}, {pr.Rank, pr.Replica}} { // every copy of the sender; pr's backups
		for k, h := range j.hosts[c.Rank] {
			if k != c.Replica && j.aliveLocked(Proc{c.Rank, k}) && h != j.self && !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
	}
	j.mu.Unlock()
	if to := j.local[a.Dst]; to != nil {
		to.q.control(f)
	}
	for _, h := range hosts {
		l := j.linkTo(h)
		j.wg.Add(1)
		go func() { defer j.wg.Done(); l.control(f) }()
	}
}

// syncAckIn handles a SyncAck from agent p, which runs the lead copy of
// its Src: it goes to the local copy of the sender, and settles the local
// backup's own.
func (j *Job) syncAckIn(p peer.ID, body []byte) error {
	a, err := proto.DecodeSyncAck(body)
	if err != nil {
		return err
	}
	if int(a.Src) >= j.spec.Size || int(a.Dst) >= j.spec.Size {
		return errSyncAckRank
	}
	if replicaOn(j.hosts, int(a.Src), p) < 0 {
		return nil // an agent speaks only for copies it runs
	}
	if to := j.local[a.Dst]; to != nil {
		to.q.control(proto.MakeFrame(proto.TypeSyncAck, body))
	}
	if pr := j.local[a.Src]; pr != nil && !pr.transmit.Load() {
		pr.syncs.fromLead(syncKey{a.Dst, a.Seq})
	}
	return nil
}

// takeoverSyncAcks sends, as lead now, the acknowledgements backup pr kept.
// pr.sendMu is held.
func (j *Job) takeoverSyncAcks(pr *proc) {
	for _, a := range pr.syncs.lead(uint32(pr.Rank)) {
		j.sendSyncAck(pr, a)
	}
}

// resendSyncAcks writes on new stream s of link l the latest
// acknowledgements of the local leads towards copies on l's agent.
func (j *Job) resendSyncAcks(l *link, s network.Stream) error {
	for _, pr := range j.procs {
		if !pr.transmit.Load() {
			continue
		}
		for _, a := range pr.syncs.latest() {
			if replicaOn(j.hosts, int(a.Dst), l.peer) < 0 {
				continue
			}
			if err := l.write(s, a.Encode()); err != nil {
				return err
			}
		}
	}
	return nil
}
