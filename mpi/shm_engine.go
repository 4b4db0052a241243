package mpi

import (
	"fmt"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
	"github.com/zorilla-p2p/zorilla/mpi/internal/shm"
)

// The exchange engine: an Alltoall(v) among ranks that all share this host
// moves its messages with the calling goroutine alone. It takes the right
// to write (no other send under way) and the right to read the rings from
// the collective's other ranks, then loops: it reads whatever frames its
// rings hold (any message, placed as the standby reader would place it),
// writes whatever its out rings have room for, and when neither moves it
// polls them for as long as a blocked receive would (none on a host with
// more ranks than cores), then sleeps until one of them changes
// (shm.Sleep). So each block crosses as the two copies of the rings, with
// one thread a rank: no writer goroutine and no standby reader to hand a
// message over to. On a 2-core machine, 4 ranks each waking four threads
// (the caller, the writer, a standby reader per peer) spent 11-12 ms in an
// exchange of 2 MiB blocks after compute where the same rings driven by one
// thread a process took 4.8 and Open MPI 5.3-6 (BENCHMARKS.md). A
// session that is writing, or a replicated one, takes the usual path
// instead.

// engineSend is a message the engine writes: its frames are made one at a
// time, as the ring takes them.
type engineSend struct {
	h     proto.MsgHeader
	data  []byte
	after *Request // written once this completes (the destination's ready), if set
	off   int      // data bytes framed so far
	hdr   [proto.HeaderLen + proto.MsgHeaderLen]byte
	hleft []byte // the current frame's header not yet written
	dleft []byte // and its data
	begun bool   // a frame was made
}

// done is whether every frame is written.
func (m *engineSend) done() bool {
	return m.begun && len(m.hleft) == 0 && len(m.dleft) == 0 && m.off >= len(m.data)
}

// engineOut is an out ring and the messages the engine writes into it, in
// order.
type engineOut struct {
	ring  *shm.Ring
	dst   int
	queue []*engineSend
}

// shmEngine is one run of the engine.
type shmEngine struct {
	s     *Session
	ins   []*inRing   // the rings from the collective's other ranks, whose right to read the engine holds
	reads []*shm.Ring // their rings, for Sleep
	outs  []*engineOut
}

// startEngine takes the right to write, and to read the rings from
// peers (world ranks, all with rings), or returns nil when this session
// cannot run the engine now: it is replicated, a send is under way or
// queued, or it has more peers than one Sleep can watch. Only the peers' rings are held, so a rank outside the collective
// that is slow to finish a frame does not hold it up.
func (s *Session) startEngine(peers []int) *shmEngine {
	if s.rep != nil || len(peers) == 0 || 2*len(peers) > shm.MaxSleepRings {
		return nil
	}
	s.sendMu.Lock()
	if s.writing || len(s.sendq) > 0 || s.shutLocked() != nil {
		s.sendMu.Unlock()
		return nil
	}
	s.writing = true
	s.sendMu.Unlock()
	s.shm.mu.RLock()
	if s.shm.closed {
		s.shm.mu.RUnlock()
		s.releaseWriter()
		return nil
	}
	e := &shmEngine{s: s}
	for _, p := range peers {
		ir := s.shm.in[p]
		ir.mu.Lock()
		e.ins, e.reads = append(e.ins, ir), append(e.reads, ir.r)
	}
	s.shm.engineRuns.Add(1)
	return e
}

// send queues a message to world rank dst, written once after completes
// (when set). It takes its sequence number now, as postMsg would.
func (e *shmEngine) send(ctx uint32, data []byte, dst, tag int, after *Request) {
	s := e.s
	m := &engineSend{h: proto.MsgHeader{Dst: uint32(dst), Src: uint32(s.rank), Ctx: ctx, Tag: int32(tag), Total: uint64(len(data))},
		data: data, after: after}
	s.sendMu.Lock()
	m.h.Seq = s.seq[dst]
	s.seq[dst]++
	s.sendMu.Unlock()
	for _, o := range e.outs {
		if o.dst == dst {
			o.queue = append(o.queue, m)
			return
		}
	}
	e.outs = append(e.outs, &engineOut{ring: s.shm.out[dst], dst: dst, queue: []*engineSend{m}})
}

// writeAll writes what the rings take now of every queue (the ready
// messages, first thing, before the caller copies its own block).
func (e *shmEngine) writeAll() error {
	for _, o := range e.outs {
		if _, _, err := e.write(o); err != nil {
			return e.s.shmWriteErr(o.dst, err)
		}
	}
	return nil
}

// written is whether every message is written.
func (e *shmEngine) written() bool {
	for _, o := range e.outs {
		if len(o.queue) > 0 {
			return false
		}
	}
	return true
}

// run moves frames until until reports true, the session ends, or a ring
// breaks the rules.
func (e *shmEngine) run(until func() bool) error {
	s := e.s
	var writes []*shm.Ring
	var poll shm.Poller // since the last move, while polling
	polling := false
	for {
		moved := false
		for _, ir := range e.ins {
			m, err := e.read(ir)
			if err != nil {
				return s.ringFailed(ir, err)
			}
			moved = moved || m
		}
		writes = writes[:0]
		for _, o := range e.outs {
			m, waiting, err := e.write(o)
			if err != nil {
				return s.shmWriteErr(o.dst, err)
			}
			moved = moved || m
			if waiting {
				writes = append(writes, o.ring)
			}
		}
		if until() {
			return nil
		}
		if err := s.alive(); err != nil {
			return err
		}
		// A futex sleep and its wake-up cost the two ranks tens of
		// microseconds on a VM; the other rank's next move is often
		// sooner (the median exchange of 8 MiB blocks on 2 ranks: 2.2-3.0
		// ms polling first, 3.3-3.8 sleeping at once).
		switch {
		case moved:
			polling = false
		case !polling && s.shm.poll > 0:
			poll, polling = shm.StartPoll(s.shm.poll), true
		case polling && poll.Next(): // look again
		default:
			polling = false
			if err := shm.Sleep(e.reads, writes, shm.Nap); err != nil {
				return err
			}
		}
	}
}

// write writes what the ring takes of o's messages, in order. waiting is
// whether a message that may be written waits for room.
func (e *shmEngine) write(o *engineOut) (moved, waiting bool, err error) {
	for len(o.queue) > 0 {
		m := o.queue[0]
		if m.after != nil && !m.after.completed() {
			return moved, false, nil
		}
		if len(m.hleft) == 0 && len(m.dleft) == 0 {
			if m.done() {
				o.queue = o.queue[1:]
				continue
			}
			n := min(e.s.maxData, len(m.data)-m.off)
			m.h.Offset = uint64(m.off)
			proto.PutMsgFrame(m.hdr[:], &m.h, n)
			m.hleft, m.dleft = m.hdr[:], m.data[m.off:m.off+n]
			m.off += n
			m.begun = true
		}
		k, err := o.ring.TryWrite(m.hleft, m.dleft)
		if err != nil {
			return moved, false, err
		}
		moved = moved || k > 0
		h := min(k, len(m.hleft))
		m.hleft, m.dleft = m.hleft[h:], m.dleft[k-h:]
		if len(m.hleft) > 0 || len(m.dleft) > 0 {
			return moved, true, nil // the ring is full
		}
	}
	return moved, false, nil
}

// read reads what ir holds now: whole frames and the start of the next,
// placed and completed as shmReadMsg does, resuming a frame begun by the
// last call. mu is held.
func (e *shmEngine) read(ir *inRing) (moved bool, err error) {
	s := e.s
	if ir.bad {
		return false, ErrProtocol
	}
	f := &ir.eng
	for {
		if !f.body {
			need := proto.HeaderLen
			if f.typed {
				need = len(f.hb)
			}
			n, err := ir.r.TryRead(f.hb[f.hn:need])
			if err != nil {
				return moved, err
			}
			f.hn += n
			moved = moved || n > 0
			if f.hn < need {
				if n == 0 {
					return moved, nil
				}
				continue
			}
			if !f.typed {
				typ, n, err := proto.ParseHeader(f.hb[:proto.HeaderLen], proto.MsgHeaderLen+s.maxData)
				switch {
				case err != nil:
					return moved, fmt.Errorf("%w: %w", ErrProtocol, err)
				case typ == proto.TypeCma: // its body is small and written with it
					f.hn = 0
					if err := s.shmReadCma(ir, n); err != nil {
						return moved, err
					}
					continue
				case typ != proto.TypeMsg:
					return moved, fmt.Errorf("%w: frame type %d", ErrProtocol, typ)
				case n < proto.MsgHeaderLen:
					return moved, fmt.Errorf("%w: msg of %d bytes", ErrProtocol, n)
				}
				f.typed, f.dataLen = true, n-proto.MsgHeaderLen
				continue
			}
			h, err := proto.DecodeMsgHeader(f.hb[proto.HeaderLen:], f.dataLen)
			if err == nil {
				err = ir.stamp(&h)
			}
			if err != nil {
				return moved, fmt.Errorf("%w: %w", ErrProtocol, err)
			}
			in, dst, err := s.place(&h, f.dataLen)
			if err != nil {
				return moved, err
			}
			f.h, f.in, f.dst, f.body = h, in, dst, true
		}
		if len(f.dst) > 0 {
			n, err := ir.r.TryRead(f.dst)
			if err != nil {
				return moved, err
			}
			f.dst = f.dst[n:]
			if n == 0 {
				return moved, nil
			}
			moved = true
			continue
		}
		s.shm.polled.Add(1) // before the receive completes: tests count
		if f.h.Last(f.dataLen) {
			s.arrived(f.in)
		}
		*f = engineFrame{}
	}
}

// stop finishes the frames begun in the in rings (the standby readers read
// whole frames), and gives back the rights to read and write.
func (e *shmEngine) stop() {
	s := e.s
	for _, ir := range e.ins {
		for ir.eng.begun() && !ir.bad && s.alive() == nil {
			if m, err := e.read(ir); err != nil {
				_ = s.ringFailed(ir, err)
			} else if !m {
				_ = shm.Sleep([]*shm.Ring{ir.r}, nil, shm.Nap)
			}
		}
		ir.mu.Unlock()
	}
	s.shm.mu.RUnlock()
	s.releaseWriter()
}

// engineFrame is the frame the engine is reading from an in ring.
type engineFrame struct {
	hb      [proto.HeaderLen + proto.MsgHeaderLen]byte
	hn      int  // header bytes read
	typed   bool // the frame header is read and checked: a MSG of dataLen data bytes
	dataLen int
	body    bool // the message header is read and placed: dst is what is left
	h       proto.MsgHeader
	in      *inMsg
	dst     []byte
}

// begun is whether part of a frame was read.
func (f *engineFrame) begun() bool { return f.hn > 0 || f.body }
