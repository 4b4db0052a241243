package router

import (
	"context"
	"sync"
)

// sendLog keeps what one local copy of a rank sent, per destination rank,
// until every live copy of the destination has acknowledged it (P2P-MPI's
// backup log). It is what makes a takeover and a reconnect lossless: when
// the lead copy of a rank dies, the next copy resends from its log what the
// receivers do not have, and when a link breaks its sender resends what
// was in flight. The receivers' sequencers drop what they already have.
//
// A log holds at most max bytes; a copy that would go past it waits for
// acknowledgements, so a backup that runs ahead of its lead waits for it.
// A frame larger than the whole bound is taken when the log is empty.
type sendLog struct {
	replicas int

	mu     sync.Mutex // guards everything below
	max    int
	bytes  int
	dsts   map[uint32]*dstLog
	dead   map[Proc]bool // destination copies whose acknowledgements no longer count
	room   chan struct{} // closed (and replaced) when bytes are trimmed or the log closes
	closed bool
}

// dstLog is the log towards one destination rank.
type dstLog struct {
	entries []logEntry // in sending order
	acked   []position // per replica of the destination
}

// logEntry is one fragment in a log: message seq, data up to byte end.
type logEntry struct {
	fr  *frame
	seq uint64
	end uint64
}

func newSendLog(max, replicas int) *sendLog {
	return &sendLog{replicas: replicas, max: max, dsts: map[uint32]*dstLog{}, dead: map[Proc]bool{},
		room: make(chan struct{})}
}

// add logs fragment fr (message seq of rank dst, data up to byte end),
// taking a reference, once there is room. It fails only when ctx ends or
// the log is closed.
func (l *sendLog) add(ctx context.Context, dst uint32, seq, end uint64, fr *frame) error {
	if err := l.waitLocked(ctx, func() bool { return l.bytes == 0 || l.bytes+len(fr.f) <= l.max }); err != nil {
		return err
	}
	defer l.mu.Unlock()
	if l.closed {
		return errJobOver
	}
	d := l.dst(dst)
	if l.allDead(dst) {
		return nil // nobody left to resend to
	}
	fr.ref()
	d.entries = append(d.entries, logEntry{fr: fr, seq: seq, end: end})
	l.bytes += len(fr.f)
	l.trim(dst, d) // a backup behind its lead logs what was acknowledged already
	return nil
}

// dst returns the log towards rank dst; l.mu is held.
func (l *sendLog) dst(dst uint32) *dstLog {
	d := l.dsts[dst]
	if d == nil {
		d = &dstLog{acked: make([]position, l.replicas)}
		l.dsts[dst] = d
	}
	return d
}

func (l *sendLog) allDead(dst uint32) bool {
	for k := range l.replicas {
		if !l.dead[Proc{int(dst), k}] {
			return false
		}
	}
	return true
}

// ack records that copy replica of rank dst has everything up to p.
func (l *sendLog) ack(dst uint32, replica int, p position) {
	if replica < 0 || replica >= l.replicas {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.dst(dst)
	if p.after(d.acked[replica]) {
		d.acked[replica] = p
		l.trim(dst, d)
	}
}

// markDead stops waiting for copy c's acknowledgements: it is lost, or has
// finalized.
func (l *sendLog) markDead(c Proc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead[c] {
		return
	}
	l.dead[c] = true
	if d := l.dsts[uint32(c.Rank)]; d != nil {
		l.trim(uint32(c.Rank), d)
	}
}

// trim drops the entries every live copy of dst has; l.mu is held.
func (l *sendLog) trim(dst uint32, d *dstLog) {
	n := 0
	for _, e := range d.entries {
		if !l.allHave(dst, d, e) {
			break
		}
		l.bytes -= len(e.fr.f)
		e.fr.unref()
		n++
	}
	if n == 0 {
		return
	}
	clear(d.entries[:n])
	d.entries = d.entries[n:]
	close(l.room)
	l.room = make(chan struct{})
}

func (l *sendLog) allHave(dst uint32, d *dstLog, e logEntry) bool {
	for k, p := range d.acked {
		if !l.dead[Proc{int(dst), k}] && !p.covers(e.seq, e.end) {
			return false
		}
	}
	return true
}

// pending returns, with a reference each, the logged frames copy replica of
// rank dst has not acknowledged, in order.
func (l *sendLog) pending(dst uint32, replica int) []*frame {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.dsts[dst]
	if d == nil || l.closed {
		return nil
	}
	var out []*frame
	for _, e := range d.entries {
		if !d.acked[replica].covers(e.seq, e.end) {
			e.fr.ref()
			out = append(out, e.fr)
		}
	}
	return out
}

// destinations lists the ranks the log holds frames for.
func (l *sendLog) destinations() []uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]uint32, 0, len(l.dsts))
	for dst, d := range l.dsts {
		if len(d.entries) > 0 {
			out = append(out, dst)
		}
	}
	return out
}

// size is the bytes logged now.
func (l *sendLog) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}

// close drops every entry and wakes a waiting add.
func (l *sendLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	for _, d := range l.dsts {
		for _, e := range d.entries {
			e.fr.unref()
		}
		d.entries = nil
	}
	l.bytes = 0
	close(l.room)
}

// waitEmpty waits until every live destination copy has acknowledged
// everything in the log, or ctx ends.
func (l *sendLog) waitEmpty(ctx context.Context) error {
	if err := l.waitLocked(ctx, func() bool { return l.bytes == 0 }); err != nil {
		return err
	}
	l.mu.Unlock()
	return nil
}

// waitLocked waits until ok holds (checked with l.mu held) or the log
// closes, and returns with l.mu held; or returns ctx's error without it.
func (l *sendLog) waitLocked(ctx context.Context, ok func() bool) error {
	l.mu.Lock()
	for !l.closed && !ok() {
		room := l.room
		l.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
		l.mu.Lock()
	}
	return nil
}
