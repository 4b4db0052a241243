package router

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// errClosedQueue is returned when delivering to a rank copy that is gone
// (finalized, lost, or its job ended): the message is dropped.
var errClosedQueue = errors.New("router: rank connection closed")

// item is one frame queued towards a rank process.
type item struct {
	f       proto.Frame
	fr      *frame // the shared buffer holding f, unref'd once written or dropped; nil for control frames
	release func() // gives the frame's bytes back to the link it came on, or nil
	local   bool   // counted against the queue's bound (from a local sender)
	begun   bool   // its first bytes are on the socket: the rest must follow
}

// kept reports whether the item survives the queue's close: a control frame
// (Start above all: a rank its agent released before the job failed must
// learn both, in that order), or the rest of a frame already begun (the
// failure must not land in the middle of a frame). Messages are dropped.
func (it item) kept() bool { return it.fr == nil || it.begun }

// done runs when the item has been written or dropped.
func (it item) done() {
	runRelease(it.release)
	if it.fr != nil {
		it.fr.unref()
	}
}

// outq is the queue of frames towards one local rank copy, drained by one
// writer goroutine into the rank's socket. When the queue is empty and the
// socket free, a producer first tries a non-blocking write itself, which
// saves a goroutine hand-off on the latency path; whatever the socket does
// not take at once is queued. Local senders are bounded by
// max bytes and wait for room; frames from links are already bounded by
// their link's window and never wait, so a link's reader is never blocked
// by one slow rank. deliver is the one place where a message reaches a
// rank, and where duplicates from replicated senders are dropped.
type outq struct {
	mu     sync.Mutex // guards everything below
	items  []item
	local  int // bytes of queued frames from local senders
	bytes  int // bytes of all queued frames
	peak   int // most bytes ever queued
	max    int
	seq    sequencer // per source rank
	closed bool
	busy   bool            // a write to the socket is in progress (writer or direct)
	raw    syscall.RawConn // the rank's socket once its writer runs, for direct writes
	final  proto.Frame     // written after the last item, then the socket is closed
	wake   chan struct{}   // capacity 1: something to write, or the socket became free
	room   chan struct{}   // closed (and replaced) when local bytes are written

	ackDirty map[uint32]bool // sources delivered from since the last takeAcks
	ackBytes int             // data bytes delivered since then
	onAck    func(now bool)  // asks for an acknowledgement (now: enough bytes to send it at once); never blocks
}

func newOutq(max int) *outq {
	return &outq{max: max, seq: sequencer{}, wake: make(chan struct{}, 1), room: make(chan struct{}),
		ackDirty: map[uint32]bool{}}
}

// deliver queues one MSG fragment from source h.Src; the queue takes one
// reference on fr. A local sender (release == nil) waits while the queue
// is over its bound. A duplicate is dropped (nil error), a fragment that
// overlaps what was delivered is cut to its new part, and a fragment out of
// sequence is refused. Whatever is not queued is released at once.
func (q *outq) deliver(ctx context.Context, fr *frame, h *proto.MsgHeader, dataLen int, release func()) error {
	fr.ref()
	it := item{f: fr.f, fr: fr, release: release, local: release == nil}
	q.mu.Lock()
	for it.local && !q.closed && q.local > 0 && q.local+len(it.f) > q.max {
		room := q.room
		q.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			it.done()
			return ctx.Err()
		}
		q.mu.Lock()
	}
	if q.closed {
		q.mu.Unlock()
		it.done()
		return errClosedQueue
	}
	v, skip := q.seq.check(h.Src, h, dataLen)
	switch v {
	case duplicate:
		q.mu.Unlock()
		it.done()
		return nil
	case violation:
		at := *q.seq.at(h.Src)
		q.mu.Unlock()
		it.done()
		return fmt.Errorf("router: message %d (bytes %d+%d) from rank %d to rank %d out of sequence: delivery is at message %d byte %d",
			h.Seq, h.Offset, dataLen, h.Src, h.Dst, at.seq, at.off)
	}
	if skip > 0 {
		it = cutFragment(it, h, skip)
	}
	q.delivered(h.Src, dataLen-skip)
	q.enqueue(it)
	return nil
}

// cutFragment replaces an item's fragment by its data from skip on: the
// part not delivered yet by another copy of the sender.
func cutFragment(it item, h *proto.MsgHeader, skip int) item {
	old := it.fr
	data := old.f[proto.HeaderLen+proto.MsgHeaderLen+skip:]
	nh := *h
	nh.Offset += uint64(skip)
	b := make([]byte, proto.HeaderLen+proto.MsgHeaderLen+len(data))
	proto.PutMsgFrame(b, &nh, len(data))
	copy(b[proto.HeaderLen+proto.MsgHeaderLen:], data)
	fr := &frame{f: b}
	fr.refs.Store(1)
	old.unref()
	it.f, it.fr = b, fr
	return it
}

// delivered notes progress from source src for the next acknowledgement;
// q.mu is held.
func (q *outq) delivered(src uint32, n int) {
	q.ackDirty[src] = true
	q.ackBytes += n
	if q.ackBytes >= ackEvery && q.onAck != nil {
		q.ackBytes = 0
		q.onAck(true)
	} else if q.onAck != nil {
		q.onAck(false)
	}
}

// takeAcks returns the positions reached since the last call.
func (q *outq) takeAcks(out []ackPos) []ackPos {
	q.mu.Lock()
	defer q.mu.Unlock()
	for src := range q.ackDirty {
		out = append(out, ackPos{src: src, pos: *q.seq.at(src)})
	}
	clear(q.ackDirty)
	q.ackBytes = 0
	return out
}

// position returns how far delivery from rank src has come.
func (q *outq) position(src uint32) position {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p := q.seq[src]; p != nil {
		return *p
	}
	return position{}
}

// markAck marks src's position to be acknowledged again (its last
// acknowledgement could not be sent).
func (q *outq) markAck(src uint32) {
	q.mu.Lock()
	q.ackDirty[src] = true
	q.mu.Unlock()
}

// ackPos is how far delivery from one source rank has come.
type ackPos struct {
	src uint32
	pos position
}

// control queues a control frame (e.g. Start). It never waits.
func (q *outq) control(f proto.Frame) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.enqueue(item{f: f})
}

// enqueue writes it straight to the socket when nothing is queued and no
// write is in progress, as far as the socket takes it without blocking, and
// queues the rest. q.mu is held; enqueue unlocks it.
func (q *outq) enqueue(it item) {
	if q.raw == nil || q.busy || len(q.items) > 0 {
		q.push(it, false)
		q.mu.Unlock()
		return
	}
	q.busy = true
	raw := q.raw
	q.mu.Unlock()
	n := writeNow(raw, it.f)
	q.mu.Lock()
	q.busy = false
	it.begun = it.begun || n > 0
	if n == len(it.f) || (q.closed && !it.kept()) {
		if len(q.items) > 0 || q.closed {
			q.signal() // the writer waits for the socket; otherwise it sleeps until a push or close
		}
		q.mu.Unlock()
		it.done()
		return
	}
	it.f = it.f[n:]
	q.push(it, true) // before anything queued meanwhile
	q.mu.Unlock()
}

// writeNow writes as much of b as the socket takes without blocking.
func writeNow(raw syscall.RawConn, b []byte) int {
	n := 0
	_ = raw.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, err := syscall.Write(int(fd), b[n:])
			if err == syscall.EINTR {
				continue
			}
			if err != nil || m <= 0 {
				break
			}
			n += m
		}
		return true // never wait: the writer goroutine takes over
	})
	return n
}

// signal wakes the writer goroutine; q.mu is held.
func (q *outq) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// push queues it, at the front when first; q.mu is held.
func (q *outq) push(it item, first bool) {
	if first {
		q.items = append([]item{it}, q.items...)
	} else {
		q.items = append(q.items, it)
	}
	if it.local {
		q.local += len(it.f)
	}
	q.bytes += len(it.f)
	q.peak = max(q.peak, q.bytes)
	q.signal()
}

// close drops the queued messages, makes the writer write what the queue
// keeps (kept) and then final (if not nil), close the socket and end.
// Later deliveries are dropped.
func (q *outq) close(final proto.Frame) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed, q.final = true, final
	var kept, dropped []item
	for _, it := range q.items {
		if it.kept() {
			kept = append(kept, it)
		} else {
			dropped = append(dropped, it)
		}
	}
	q.items, q.local, q.bytes = kept, 0, 0
	for _, it := range kept {
		q.bytes += len(it.f)
	}
	close(q.room)
	q.signal()
	q.mu.Unlock()
	for _, it := range dropped {
		it.done()
	}
}

func runRelease(f func()) {
	if f != nil {
		f()
	}
}

// writeLoop writes queued frames to conn, many per system call, until the
// queue is closed or a write fails. It closes conn when it ends.
func (q *outq) writeLoop(conn net.Conn) error {
	defer conn.Close()
	if sc, ok := conn.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			q.mu.Lock()
			q.raw = raw
			q.mu.Unlock()
		}
	}
	for {
		batch, final, done := q.next()
		if done {
			if final != nil {
				_, err := conn.Write(final)
				return err
			}
			return nil
		}
		bufs := make(net.Buffers, len(batch))
		for i, it := range batch {
			bufs[i] = it.f
		}
		_, err := bufs.WriteTo(conn)
		q.written(batch)
		if err != nil {
			q.close(nil)
			return err
		}
	}
}

// maxBatch bounds the frames written in one system call.
const maxBatch = 64

// next waits for frames to write and a free socket, and takes up to
// maxBatch frames; done is set once the queue is closed and empty.
func (q *outq) next() (batch []item, final proto.Frame, done bool) {
	for {
		q.mu.Lock()
		if q.busy {
			q.mu.Unlock()
			<-q.wake
			continue
		}
		if len(q.items) > 0 {
			n := min(len(q.items), maxBatch)
			batch = append([]item(nil), q.items[:n]...)
			clear(q.items[:n])
			q.items = q.items[n:]
			for _, it := range batch {
				q.bytes -= len(it.f)
			}
			q.busy = true
			q.mu.Unlock()
			return batch, nil, false
		}
		if q.closed {
			final, q.final = q.final, nil
			q.raw = nil
			q.mu.Unlock()
			return nil, final, true
		}
		q.mu.Unlock()
		<-q.wake
	}
}

// written releases a written batch, frees the socket and makes room for
// local senders.
func (q *outq) written(batch []item) {
	local := 0
	for _, it := range batch {
		if it.local {
			local += len(it.f)
		}
		it.done()
	}
	q.mu.Lock()
	q.busy = false
	if local > 0 && !q.closed {
		q.local -= local
		close(q.room)
		q.room = make(chan struct{})
	}
	q.mu.Unlock()
}

// stats returns the bytes queued now and the most ever queued.
func (q *outq) stats() (queued, peak int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes, q.peak
}
