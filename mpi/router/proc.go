package router

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// attach connects an authenticated process to its local copy and starts its
// reader and writer. It answers Welcome (and Start if the job was already
// released), or a refusal.
func (j *Job) attach(p Proc, conn net.Conn, br *bufio.Reader, asksShm bool) {
	j.mu.Lock()
	refuse := j.attachLocked(p)
	var pr *proc
	released := false
	var shmFrame, shmOn proto.Frame
	var fds []int
	if refuse == nil {
		pr = j.local[p.Rank]
		pr.conn, pr.state = conn, procRunning
		released = j.released
		j.attached++
		j.emit(Event{Kind: EventInit, Rank: p.Rank, Replica: p.Replica})
		if j.attached == len(j.procs) {
			close(j.ready)
		}
		j.wg.Add(2)
		var err error
		if shmFrame, fds, err = j.shm.attached(p.Rank, asksShm); err != nil {
			log.Warnf("job %s rank %d: no shared memory: %v", j.spec.ID, p.Rank, err)
		}
		j.shm.done(len(j.procs))
		if released {
			shmOn = j.shm.onFrame(p.Rank)
		}
	}
	failure := j.err
	j.mu.Unlock()
	switch {
	case failure != nil && refuse != nil && refuse.Code == proto.RefuseFailed:
		writeAndClose(conn, failure.frame())
		return
	case refuse != nil:
		writeAndClose(conn, refuse.Encode())
		return
	}
	hello := append(j.welcome[:len(j.welcome):len(j.welcome)], shmFrame...)
	if j.spec.Replicas > 1 {
		hello = append(append(proto.Frame(nil), hello...), j.roleFrame(pr.leads.Load())...)
	}
	if released {
		hello = append(append(append(proto.Frame(nil), hello...), shmOn...), proto.NewFrame(proto.TypeStart, 0)...)
	}
	if err := writeWithFiles(conn, hello, fds); err != nil {
		pr.q.close(nil) // the reader sees the broken connection and reports the copy lost
	}
	_ = conn.SetDeadline(time.Time{}) // the handshake's deadline; a running rank may wait forever
	go j.writeLoop(pr, conn)
	go j.readLoop(pr, conn, br)
}

// attachLocked says why copy p may not attach now, or nil; j.mu is held.
func (j *Job) attachLocked(p Proc) *proto.Refused {
	var pr *proc
	if p.Rank >= 0 && p.Rank < len(j.local) {
		pr = j.local[p.Rank]
	}
	switch {
	case j.removed:
		return &proto.Refused{Code: proto.RefuseEnded, Reason: "job has ended"}
	case j.err != nil:
		return &proto.Refused{Code: proto.RefuseFailed, Reason: j.err.Error()}
	case pr == nil || pr.Replica != p.Replica:
		return &proto.Refused{Code: proto.RefuseMember, Reason: fmt.Sprintf("rank %d replica %d does not run here", p.Rank, p.Replica)}
	case pr.state != procWaiting:
		return &proto.Refused{Code: proto.RefuseDuplicate, Reason: fmt.Sprintf("rank %d replica %d already connected", p.Rank, p.Replica)}
	}
	return nil
}

func (j *Job) writeLoop(pr *proc, conn net.Conn) {
	defer j.wg.Done()
	defer close(pr.wdone)
	if err := pr.q.writeLoop(conn); err != nil {
		log.Debugf("job %s rank %d: write: %v", j.spec.ID, pr.Rank, err)
	}
}

// readLoop reads what a rank process sends until it finalizes, aborts, or
// its connection ends.
func (j *Job) readLoop(pr *proc, conn net.Conn, br *bufio.Reader) {
	defer j.wg.Done()
	for {
		fr, err := j.r.frames.read(br, j.cfg.bodyMax())
		if err != nil {
			j.procGone(pr, fmt.Errorf("connection ended without Finalize: %w", err))
			return
		}
		f := fr.f
		switch f.Type() {
		case proto.TypeMsg:
			err := j.route(pr, fr)
			fr.unref()
			if err != nil {
				if j.ctx.Err() == nil {
					j.procGone(pr, err)
					_ = conn.Close()
				}
				return
			}
		case proto.TypeDecide:
			if err := j.choose(pr, f.Body()); err != nil {
				fr.unref()
				j.procGone(pr, err)
				_ = conn.Close()
				return
			}
		case proto.TypeSyncAck:
			if err := j.syncAckOut(pr, f.Body()); err != nil {
				fr.unref()
				j.procGone(pr, err)
				_ = conn.Close()
				return
			}
			fr.unref()
		case proto.TypeSaved:
			err := j.saved(pr, f.Body())
			fr.unref()
			if err != nil {
				j.procGone(pr, err)
				_ = conn.Close()
				return
			}
		case proto.TypeFinalize:
			j.finalize(pr)
			return
		case proto.TypeAbort:
			a, err := proto.DecodeAbort(f.Body())
			if err != nil {
				j.procGone(pr, err)
				_ = conn.Close()
				return
			}
			j.abort(pr, a)
			return
		default:
			j.procGone(pr, fmt.Errorf("unexpected frame type %d", f.Type()))
			_ = conn.Close()
			return
		}
	}
}

// route sends one MSG fragment from local copy from to every copy of its
// destination rank: straight into a local copy's queue, or over the link to
// the agent running it. The source rank is stamped from the connection, and
// the copy's sequence numbers are checked, so a process cannot pose as
// another rank or break a receiver's reassembly.
func (j *Job) route(from *proc, fr *frame) error {
	f := fr.f
	body := f.Body()
	if len(body) < proto.MsgHeaderLen {
		return fmt.Errorf("message of %d bytes", len(body))
	}
	n := len(body) - proto.MsgHeaderLen
	h, err := proto.DecodeMsgHeader(body, n)
	if err != nil {
		return err
	}
	if int(h.Dst) >= j.spec.Size {
		return fmt.Errorf("message to rank %d of %d", h.Dst, j.spec.Size)
	}
	proto.PutSrc(body, uint32(from.Rank))
	h.Src = uint32(from.Rank)
	if !from.sent.checkOwn(h.Dst, &h, n) {
		return fmt.Errorf("message %d to rank %d out of sequence", h.Seq, h.Dst)
	}
	if err := from.choices.wait(j.ctx); err != nil {
		return err // nothing leaves before the backups hold the choices it may depend on
	}
	if err := from.log.add(j.ctx, h.Dst, h.Seq, h.Offset+uint64(n), fr); err != nil {
		return err
	}
	from.sendMu.Lock()
	defer from.sendMu.Unlock()
	if !from.transmit.Load() {
		return nil // a backup: its lead transmits; the log keeps it until the receivers have it
	}
	for _, host := range j.hosts[h.Dst] {
		if host == j.self {
			j.r.local.add(f)
			err = j.local[h.Dst].q.deliver(j.ctx, fr, &h, n, nil)
		} else {
			err = j.linkTo(host).send(f)
		}
		if err != nil && j.ctx.Err() != nil {
			return err
		}
	}
	return nil
}

// finalize records that a copy finalized; it gets Bye and is closed. It
// first waits until what the copy sent has reached every live copy of its
// destinations: if the copy that transmitted it dies later, this log may be
// all that is left of it.
func (j *Job) finalize(pr *proc) {
	if err := pr.log.waitEmpty(j.ctx); err != nil {
		return // the job ended: the copy is told so by its queue
	}
	j.askAck(true)
	j.mu.Lock()
	if pr.state == procRunning {
		pr.state = procFinalized
		j.emit(Event{Kind: EventFinalized, Rank: pr.Rank, Replica: pr.Replica})
	}
	j.mu.Unlock()
	pr.q.close(proto.NewFrame(proto.TypeBye, 0))
}

// abort ends the job everywhere on behalf of a rank that called Abort.
func (j *Job) abort(pr *proc, a proto.Abort) {
	j.mu.Lock()
	if pr.state != procRunning {
		j.mu.Unlock()
		return
	}
	pr.state = procGone
	j.emit(Event{Kind: EventAbort, Rank: pr.Rank, Replica: pr.Replica, Code: int(a.Code)})
	j.mu.Unlock()
	reason := a.Reason
	if reason == "" {
		reason = fmt.Sprintf("rank %d called Abort(%d)", pr.Rank, a.Code)
	}
	j.fail(&Failure{Cause: proto.CauseAborted, Rank: pr.Rank, Code: int(a.Code), Reason: reason})
}

// procGone records that a copy's connection ended (or misbehaved) without
// Finalize, or that its process ended before it connected. The job fails
// when the rank has no other live copy.
func (j *Job) procGone(pr *proc, err error) {
	j.mu.Lock()
	if (pr.state != procRunning && pr.state != procWaiting) || j.removed || j.err != nil {
		j.mu.Unlock()
		return
	}
	pr.state = procGone
	j.emit(Event{Kind: EventRankLost, Rank: pr.Rank, Replica: pr.Replica, Err: err})
	j.mu.Unlock()
	pr.q.close(nil)
	j.announceLost(pr.Proc)
	j.copyDown(pr.Proc, fmt.Sprintf("ended without Finalize: %v", err))
}

// writeAndClose sends a last frame on a connection and closes it.
func writeAndClose(conn net.Conn, f proto.Frame) {
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	_, _ = conn.Write(f)
	_ = conn.Close()
}

var errJobOver = errors.New("router: job over")
