package router

import (
	"bufio"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// inbound is a remote agent's link stream for one job, seen from the
// receiving side: MSG frames come in and are delivered to local copies;
// their bytes go back to the sender as Credit once written to the rank
// (or dropped).
type inbound struct {
	j    *Job
	peer peer.ID
	s    network.Stream
	br   *bufio.Reader
	done chan struct{} // closed when the reader ends

	window int // what the sender may have in flight: Config.linkWindow

	wmu sync.Mutex    // serializes writes to s
	wdl writeDeadline // s's write deadline; wmu guards it

	cmu  sync.Mutex // guards owed
	owed int
	kick chan struct{} // capacity 1: credit to send
}

// serveInbound registers an accepted stream and reads it until it ends.
// It runs in the stream handler's goroutine.
func (j *Job) serveInbound(s network.Stream, br *bufio.Reader) {
	in := &inbound{j: j, peer: s.Conn().RemotePeer(), s: s, br: br, window: j.cfg.linkWindow(len(j.remote)),
		done: make(chan struct{}), kick: make(chan struct{}, 1)}
	// The Accept must be the stream's first frame: once registered, the
	// stream may be written to (the job's failure, by fail), and an opener
	// that read the failure in place of the Accept would take the handshake
	// for broken and count this agent lost. Holding wmu from before the
	// registration until the Accept is written makes any such write wait.
	in.wmu.Lock()
	j.mu.Lock()
	if j.removed || j.err != nil {
		failure := j.err
		j.mu.Unlock()
		in.wmu.Unlock()
		answerEnded(s, j.cfg, failure)
		return
	}
	// The remote opens a new stream only once its last one broke: one it
	// left behind without a reset (its connection died) would wait for a
	// frame forever.
	for old := range j.inbound {
		if old.peer == in.peer {
			_ = old.s.Reset()
		}
	}
	j.inbound[in] = struct{}{}
	j.wg.Add(2)
	j.mu.Unlock()
	j.heardFrom(in.peer)
	defer j.wg.Done()
	defer func() {
		j.mu.Lock()
		delete(j.inbound, in)
		j.mu.Unlock()
	}()
	defer close(in.done)
	go in.creditLoop()
	accept := proto.Accept{Window: uint32(in.window), MaxData: uint32(j.cfg.MaxData)}
	err := in.writeLocked(accept.Encode())
	in.wmu.Unlock()
	if err != nil {
		in.broken(fmt.Errorf("write to %s: %w", in.peer.ShortString(), err))
		return
	}
	in.readLoop()
}

// readLoop reads the remote's frames until the stream ends. It sets no
// deadline: every frame stamps the remote alive, and the job's watch loop
// judges its silence (watch.go) and resets this stream when it counts the
// remote lost.
func (in *inbound) readLoop() {
	j := in.j
	for {
		fr, err := j.r.frames.read(in.br, j.cfg.bodyMax())
		if err != nil {
			in.broken(fmt.Errorf("link from %s: %w", in.peer.ShortString(), err))
			return
		}
		j.heardFrom(in.peer)
		f := fr.f
		switch f.Type() {
		case proto.TypeMsg:
			err := j.fromLink(in, fr)
			fr.unref()
			if err != nil {
				in.broken(fmt.Errorf("link from %s: %w", in.peer.ShortString(), err))
				return
			}
		case proto.TypePing:
			if in.write(proto.NewFrame(proto.TypePong, 0)) != nil {
				return
			}
		case proto.TypeFail:
			j.remoteFail(in.peer, f.Body())
		case proto.TypeAck:
			acks, err := proto.DecodeAck(f.Body())
			if err != nil {
				in.broken(fmt.Errorf("link from %s: %w", in.peer.ShortString(), err))
				return
			}
			j.acked(in.peer, acks)
		case proto.TypeCopyLost:
			c, err := proto.DecodeCopyLost(f.Body())
			if err != nil {
				in.broken(fmt.Errorf("link from %s: %w", in.peer.ShortString(), err))
				return
			}
			j.copyLost(in.peer, c)
		case proto.TypeDecide, proto.TypeDecideAck, proto.TypeAgentLost, proto.TypeSyncAck:
			handle := map[byte]func(peer.ID, []byte) error{proto.TypeDecide: j.choiceIn,
				proto.TypeDecideAck: j.choiceHeld, proto.TypeAgentLost: j.reportedLost, proto.TypeSyncAck: j.syncAckIn}[f.Type()]
			if err := handle(in.peer, f.Body()); err != nil {
				in.broken(fmt.Errorf("link from %s: %w", in.peer.ShortString(), err))
				return
			}
		case proto.TypeBye:
			j.remoteEnded(in.peer)
			_ = in.s.Close()
			return
		default:
			in.broken(fmt.Errorf("link from %s: %w: unexpected frame type %d", in.peer.ShortString(), errViolation, f.Type()))
			return
		}
	}
}

// fromLink delivers a MSG frame from a remote agent to the local copy of its
// destination. The source rank must run on that agent.
func (j *Job) fromLink(in *inbound, fr *frame) error {
	f := fr.f
	body := f.Body()
	if len(body) < proto.MsgHeaderLen {
		return fmt.Errorf("%w: message of %d bytes", errViolation, len(body))
	}
	n := len(body) - proto.MsgHeaderLen
	h, err := proto.DecodeMsgHeader(body, n)
	if err != nil {
		return err
	}
	if int(h.Dst) >= j.spec.Size || int(h.Src) >= j.spec.Size || j.local[h.Dst] == nil {
		return fmt.Errorf("%w: message %d->%d has no destination here", errViolation, h.Src, h.Dst)
	}
	if replicaOn(j.hosts, int(h.Src), in.peer) < 0 {
		return fmt.Errorf("%w: rank %d does not run on %s", errViolation, h.Src, in.peer.ShortString())
	}
	size := len(f)
	j.r.recv.add(f)
	err = j.local[h.Dst].q.deliver(j.ctx, fr, &h, n, func() { in.returned(size) })
	if err != nil && !errors.Is(err, errClosedQueue) && j.ctx.Err() == nil {
		return fmt.Errorf("%w: %w", errViolation, err)
	}
	return nil
}

// returned counts bytes handed to a rank; credit goes back in batches of a
// quarter window. That never leaves a sender waiting: it waits only with
// more than a window less one fragment unreturned, and as a window is at
// least two fragments, that is more than a quarter window.
func (in *inbound) returned(n int) {
	in.cmu.Lock()
	in.owed += n
	send := in.owed >= in.window/4
	in.cmu.Unlock()
	if send {
		select {
		case in.kick <- struct{}{}:
		default:
		}
	}
}

func (in *inbound) creditLoop() {
	defer in.j.wg.Done()
	for {
		select {
		case <-in.kick:
		case <-in.done:
			return
		case <-in.j.ctx.Done():
			return
		}
		in.cmu.Lock()
		n := in.owed
		in.owed = 0
		in.cmu.Unlock()
		if n > 0 && in.write(proto.U32Frame(proto.TypeCredit, uint32(n))) != nil {
			return
		}
	}
}

// write writes one frame back to the sender (writeLocked).
func (in *inbound) write(f proto.Frame) error {
	in.wmu.Lock()
	err := in.writeLocked(f)
	in.wmu.Unlock()
	if err != nil {
		in.broken(fmt.Errorf("write to %s: %w", in.peer.ShortString(), err))
	}
	return err
}

// writeLocked writes one frame within one to one and a half heartbeat
// timeouts (writeDeadline); in.wmu is held.
func (in *inbound) writeLocked(f proto.Frame) error {
	in.wdl.arm(in.s, in.j.cfg.HeartbeatTimeout)
	_, err := in.s.Write(f)
	return err
}

// broken ends a stream that failed. A stream that was reset or closed, or
// a write that timed out, is not proof that the remote is gone: it opens a
// new stream if it lives, and the watch loop judges its silence. A remote
// that broke the protocol is lost.
func (in *inbound) broken(err error) {
	_ = in.s.Reset()
	if in.j.ctx.Err() != nil {
		return
	}
	if provesLost(err) {
		in.j.peerLost(in.peer, err)
		return
	}
	log.Infof("job %s: %v", in.j.spec.ID, err)
}

// silenceLimit is how long agent p may stay silent: what this agent's own
// link to it measured, or the configured heartbeat timeout.
func (j *Job) silenceLimit(p peer.ID) time.Duration {
	j.mu.Lock()
	l := j.links[p]
	j.mu.Unlock()
	if l == nil {
		return j.cfg.HeartbeatTimeout
	}
	return l.timeout()
}

// errViolation marks a frame that breaks the link protocol.
var errViolation = errors.New("protocol violation")

// provesLost reports whether a stream's error shows its remote broken: it
// sent what the protocol forbids. Silence is the watch loop's to judge.
func provesLost(err error) bool {
	return errors.Is(err, proto.ErrMalformed) || errors.Is(err, proto.ErrTooLarge) || errors.Is(err, errViolation)
}

// control writes a control frame (Fail).
func (in *inbound) control(f proto.Frame) { _ = in.write(f) }

// shutdown ends the stream with a last frame (Bye, or the job's failure).
func (in *inbound) shutdown(last proto.Frame) {
	in.wmu.Lock()
	in.wdl.set(in.s, time.Now().Add(time.Second))
	if last != nil {
		_, _ = in.s.Write(last)
	}
	in.wmu.Unlock()
	_ = in.s.Close()
}

// answerEnded answers a link open for a job that is over here: a failed
// job accepts and sends its failure at once (so the opener learns the
// cause), a job that ended well is refused as ended.
func answerEnded(s network.Stream, cfg Config, failure *Failure) {
	if failure != nil && failure.gone {
		refuse(s, proto.Refused{Code: proto.RefuseGone, Reason: "this agent left the job"})
		return
	}
	if failure == nil {
		refuse(s, proto.Refused{Code: proto.RefuseEnded, Reason: "job has ended here"})
		return
	}
	_ = s.SetWriteDeadline(time.Now().Add(time.Second))
	accept := proto.Accept{Window: uint32(cfg.Window), MaxData: uint32(cfg.MaxData)}
	if _, err := s.Write(append(accept.Encode(), failure.frame()...)); err != nil {
		_ = s.Reset()
		return
	}
	_ = s.Close()
}

// refuse answers an Open with a refusal and closes the stream.
func refuse(s network.Stream, r proto.Refused) {
	_ = s.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := s.Write(r.Encode()); err != nil {
		_ = s.Reset()
		return
	}
	_ = s.Close()
}
