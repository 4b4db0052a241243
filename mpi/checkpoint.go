package mpi

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// Coordinated checkpoints. Comm.Checkpoint is a collective the
// program calls at a point of its choosing, typically between iterations,
// with a function that writes its state. Rank 0 decides whether this call
// takes a checkpoint (every call, or once --checkpoint-every has passed
// since the last one) and which number it gets; the decision travels to
// every rank, so all decide alike. Then each rank sends a marker to every
// other rank in each (source, destination) channel, after everything it
// sent before the call (Chandy and Lamport's algorithm). Once a rank holds
// the markers of all others, every message sent to it before the cut has
// arrived, and the ones its program has not received yet are the channels'
// state: they are saved with the rank's own state and handed to the program
// again, before anything else, when the job restarts from this checkpoint.
// No message sent after the cut can arrive before that, because no rank
// leaves the call before every rank has written its file. A rank then tells
// its agent (a Saved frame) the file's size and sha256; the checkpoint is
// complete when every rank has.

// Environment variables of checkpoints, set by the agent.
const (
	EnvCheckpointDir   = "ZORILLA_CHECKPOINT_DIR"   // folder where Checkpoint writes this rank's files
	EnvCheckpointEvery = "ZORILLA_CHECKPOINT_EVERY" // a Go duration: take a checkpoint only when that long has passed
	EnvRestore         = "ZORILLA_RESTORE"          // this rank's file of the checkpoint to restart from
)

// Tags of the checkpoint protocol, in context proto.CtxCheckpoint.
const (
	tagDecide = iota + 1
	tagMarker
	tagWritten
	tagComplete
)

// checkpoints is a session's checkpoint state.
type checkpoints struct {
	mu    sync.Mutex // one Checkpoint at a time
	dir   string
	every time.Duration
	next  uint64    // number the next checkpoint takes (rank 0's counts)
	last  time.Time // rank 0: when the last checkpoint (or Init) ended
	// now is set by the agent's CHECKPOINTNOW (set by the reader, taken
	// by rank 0's next call): take the next checkpoint whatever every says.
	now atomic.Bool

	restored    *io.SectionReader // the program's state restored, or nil
	restoredNum uint64
	restoreFile *os.File

	resized      *resized   // restarted at another size: where the old ranks' files are
	resizedFiles []*os.File // the old ranks' files RestoredRank opened
}

func newCheckpoints(opt Options) *checkpoints {
	return &checkpoints{dir: opt.CheckpointDir, every: opt.CheckpointEvery, next: 1, last: time.Now()}
}

// CheckpointFile is the name of a rank's file of checkpoint num in the
// checkpoint folder.
func CheckpointFile(num uint64, rank int) string {
	return fmt.Sprintf("ckpt-%d.rank-%d", num, rank)
}

// Checkpoint takes a coordinated checkpoint of the job when one is due and
// reports whether it did. Every rank of the world communicator must call it
// at the same point of the program (it is a collective), with no receive
// pending (no Irecv not yet complete): a pending receive could not be
// restored. save writes this rank's state; on restart, Restored returns what
// it wrote. The messages sent to this rank before the call and not yet
// received are kept with the checkpoint and received again after a restart,
// so the program needs to save only its own variables.
//
// Without --checkpoint-every every call takes a checkpoint; with it, a call
// takes one only when that long has passed since the last one (rank 0's
// clock decides for all). A rank whose save fails makes the call fail on
// every rank and that checkpoint is never used. In a replicated job (-r 2)
// the copies already survive hosts: Checkpoint does nothing and returns
// false. Outside an agent that keeps checkpoints (no checkpoint folder) it
// does nothing either.
func (c *Comm) Checkpoint(ctx context.Context, save func(w io.Writer) error) (bool, error) {
	s := c.s
	if c != s.world {
		return false, argErr("Checkpoint is a collective of the world communicator")
	}
	if save == nil {
		return false, argErr("Checkpoint without a save function")
	}
	if s.rep != nil {
		return false, nil
	}
	ck := s.ck
	ck.mu.Lock()
	defer ck.mu.Unlock()
	if err := s.noPendingRecv(); err != nil {
		return false, err
	}
	num, due, err := c.decide(ctx, ck)
	if err != nil || !due {
		return false, err
	}
	if ck.dir == "" {
		return false, fmt.Errorf("mpi: checkpoint %d: the agent gave rank %d no checkpoint folder", num, c.rank)
	}
	msgs, err := c.flush(ctx, num)
	if err != nil {
		return false, err
	}
	sv, werr := writeCheckpoint(filepath.Join(ck.dir, CheckpointFile(num, c.rank)),
		fileHeader{Num: num, Rank: uint32(c.rank), Size: uint32(c.size)}, msgs, save)
	if err := c.complete(ctx, num, werr); err != nil {
		return false, err
	}
	sv.Quiet = len(msgs) == 0
	s.postFrame(sv.Encode())
	ck.next = num + 1
	ck.last = time.Now()
	return true, nil
}

// noPendingRecv refuses a checkpoint while the program has a receive
// posted: its request could not be restored.
func (s *Session) noPendingRecv() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.m.posted {
		if r.ctx != proto.CtxCheckpoint {
			return argErr("Checkpoint with a receive pending (from rank %d, tag %d): wait for it first", r.src, r.tag)
		}
	}
	return nil
}

// decide has rank 0 decide whether this call checkpoints, and tells the
// others, with the number the checkpoint takes.
func (c *Comm) decide(ctx context.Context, ck *checkpoints) (uint64, bool, error) {
	var b [9]byte
	if c.rank == 0 {
		asked := ck.now.Swap(false)
		due := ck.dir != "" && (ck.every <= 0 || asked || time.Since(ck.last) >= ck.every)
		binary.LittleEndian.PutUint64(b[:], ck.next)
		if due {
			b[8] = 1
		}
		for r := 1; r < c.size; r++ {
			if err := c.ckSend(ctx, b[:], r, tagDecide); err != nil {
				return 0, false, err
			}
		}
	} else if err := c.ckRecv(ctx, b[:], 0, tagDecide); err != nil {
		return 0, false, err
	}
	num := binary.LittleEndian.Uint64(b[:])
	if num == 0 || num < ck.next && c.rank != 0 {
		return 0, false, fmt.Errorf("%w: checkpoint number %d after %d", ErrProtocol, num, ck.next-1)
	}
	return num, b[8] == 1, nil
}

// flush sends a marker to every other rank and waits for theirs, then
// returns the channels' state: the messages that arrived before the
// markers and that the program has not received.
func (c *Comm) flush(ctx context.Context, num uint64) ([]savedMsg, error) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], num)
	var reqs []*Request
	for r := 0; r < c.size; r++ {
		if r != c.rank {
			reqs = append(reqs, c.isend(proto.CtxCheckpoint, b[:], r, tagMarker, false))
		}
	}
	for r := 0; r < c.size; r++ {
		if r == c.rank {
			continue
		}
		var m [8]byte
		if err := c.ckRecv(ctx, m[:], r, tagMarker); err != nil {
			return nil, err
		}
		if got := binary.LittleEndian.Uint64(m[:]); got != num {
			return nil, fmt.Errorf("%w: marker of checkpoint %d from rank %d during checkpoint %d", ErrProtocol, got, r, num)
		}
	}
	for _, q := range reqs {
		if _, err := q.Wait(); err != nil {
			return nil, fmt.Errorf("mpi: checkpoint %d: marker: %w", num, err)
		}
	}
	return c.s.channelState()
}

// channelState copies the messages arrived and not received. Every
// message sent before the markers has fully arrived (a source's messages
// arrive in order, the marker last).
func (s *Session) channelState() ([]savedMsg, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []savedMsg
	for _, m := range s.m.unexpected {
		if m.ctx == proto.CtxCheckpoint {
			continue
		}
		if !m.done {
			return nil, fmt.Errorf("%w: message from rank %d still arriving after its marker", ErrProtocol, m.src)
		}
		out = append(out, savedMsg{Src: uint32(m.src), Ctx: m.ctx, Tag: int32(m.tag), Data: append([]byte(nil), m.buf[:m.total]...)})
	}
	return out, nil
}

// complete tells rank 0 whether this rank's file is written, and returns
// once rank 0 said every rank's is (or an error naming one that failed).
func (c *Comm) complete(ctx context.Context, num uint64, werr error) error {
	msg := func(err error) []byte {
		if err == nil {
			return []byte{0}
		}
		return append([]byte{1}, clipReason(err.Error())...)
	}
	var verdict []byte
	if c.rank == 0 {
		verdict = msg(werr)
		for r := 1; r < c.size; r++ {
			buf := make([]byte, 1+proto.MaxReasonLen)
			st, err := c.ckRecvStatus(ctx, buf, r, tagWritten)
			if err != nil {
				return err
			}
			if verdict[0] == 0 && st.Bytes > 0 && buf[0] != 0 {
				verdict = append([]byte{1}, fmt.Sprintf("rank %d: %s", r, buf[1:st.Bytes])...)
			}
		}
		for r := 1; r < c.size; r++ {
			if err := c.ckSend(ctx, verdict, r, tagComplete); err != nil {
				return err
			}
		}
	} else {
		if err := c.ckSend(ctx, msg(werr), 0, tagWritten); err != nil {
			return err
		}
		buf := make([]byte, 1+proto.MaxReasonLen+32)
		st, err := c.ckRecvStatus(ctx, buf, 0, tagComplete)
		if err != nil {
			return err
		}
		verdict = buf[:st.Bytes]
	}
	if len(verdict) == 0 || verdict[0] != 0 {
		why := "no verdict"
		if len(verdict) > 0 {
			why = string(verdict[1:])
		}
		if werr != nil {
			return fmt.Errorf("mpi: checkpoint %d not taken: %w", num, werr)
		}
		return fmt.Errorf("mpi: checkpoint %d not taken: %s", num, why)
	}
	return nil
}

func clipReason(s string) string {
	if len(s) > proto.MaxReasonLen {
		return s[:proto.MaxReasonLen]
	}
	return s
}

func (c *Comm) ckSend(ctx context.Context, b []byte, dst, tag int) error {
	_, err := waitCtx(ctx, c.isend(proto.CtxCheckpoint, b, dst, tag, true))
	return err
}

func (c *Comm) ckRecv(ctx context.Context, b []byte, src, tag int) error {
	_, err := c.ckRecvStatus(ctx, b, src, tag)
	return err
}

func (c *Comm) ckRecvStatus(ctx context.Context, b []byte, src, tag int) (Status, error) {
	return waitCtx(ctx, c.irecv(proto.CtxCheckpoint, b, 1, src, tag))
}

// waitCtx waits for r, or for ctx: a checkpoint abandoned half-way leaves
// the ranks out of step, so the caller should then end the program.
func waitCtx(ctx context.Context, r *Request) (Status, error) {
	select {
	case <-r.done:
		return r.Wait()
	case <-ctx.Done():
		return Status{}, fmt.Errorf("mpi: checkpoint: %w", ctx.Err())
	}
}

// Restored returns the state the program saved in the checkpoint this
// process restarts from, and true; or nil and false when the job starts
// from scratch. Call it after Init, before the first Checkpoint.
func (s *Session) Restored() (io.Reader, bool) {
	if s.ck.restored == nil {
		return nil, false
	}
	return s.ck.restored, true
}

// RestoredFrom is the number of the checkpoint this process restarted
// from, or 0.
func (s *Session) RestoredFrom() uint64 { return s.ck.restoredNum }

// Restored is Session.Restored of the process's session (Init first).
func Restored() (io.Reader, bool) {
	if s := session(); s != nil {
		return s.Restored()
	}
	return nil, false
}

// restore opens the rank's checkpoint file, checks it is this rank's, and
// queues the channels' state it holds as messages arrived, before any
// message of the new start. It runs before the reader starts.
func (s *Session) restore(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("mpi: restore: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("mpi: restore: %w", err)
	}
	h, msgs, state, err := readCheckpoint(f, fi.Size())
	if err == nil && (int(h.Rank) != s.rank || int(h.Size) != s.size) {
		err = fmt.Errorf("file of rank %d of %d, this is rank %d of %d", h.Rank, h.Size, s.rank, s.size)
	}
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("mpi: restore from %s: %w", path, err)
	}
	for _, m := range msgs {
		if int(m.Src) >= s.size {
			_ = f.Close()
			return fmt.Errorf("mpi: restore from %s: message from rank %d of %d", path, m.Src, s.size)
		}
		s.m.unexpected = append(s.m.unexpected, &inMsg{src: int(m.Src), ctx: m.Ctx, tag: int(m.Tag),
			total: len(m.Data), got: len(m.Data), buf: m.Data, done: true})
	}
	s.ck.restored, s.ck.restoredNum, s.ck.restoreFile = state, h.Num, f
	s.ck.next = h.Num + 1
	return nil
}

// errNoCheckpoint is returned by readCheckpoint for a file that is not one.
var errNoCheckpoint = errors.New("not a zorilla checkpoint file")

// checkpointEnv reads the checkpoint variables into o.
func (o *Options) checkpointEnv() error {
	o.CheckpointDir = os.Getenv(EnvCheckpointDir)
	o.Restore = os.Getenv(EnvRestore)
	if err := o.resizedEnv(); err != nil {
		return err
	}
	if v := os.Getenv(EnvCheckpointEvery); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("%w: %s=%q is not a duration like 10m", ErrArg, EnvCheckpointEvery, v)
		}
		o.CheckpointEvery = d
	}
	return nil
}
