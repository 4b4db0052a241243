package mpi_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// cmaMin is the single-copy threshold of these tests (useCma).
const cmaMin = 64 << 10

// useCma turns single-copy messages on for the test's ranks.
func useCma(t *testing.T) { t.Setenv(mpi.EnvCmaMin, fmt.Sprint(cmaMin)) }

// bothCopyModes runs test once with large messages single-copy and once
// copied through the ring.
func bothCopyModes(t *testing.T, test func(*testing.T)) {
	for _, mode := range []string{"single-copy", "copies"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "single-copy" {
				useCma(t)
			}
			test(t)
		})
	}
}

// cmaSizes straddle the single-copy threshold.
var cmaSizes = []int{8, cmaMin - 1, cmaMin, cmaMin + 1, 1<<20 + 3}

// TestCmaMixedSizes: on 4 ranks, all on one agent and two per agent, every
// rank sends every other one messages on both sides of the single-copy
// threshold: first to receives posted before (the copy goes straight into
// the receive's buffer), with Isend, Send and Ssend; then unexpected, taken
// with Probe and Recv from AnySource; then one into a receive too small for
// it (truncation, and the next message still arrives). Ranks on one agent
// must have received the large ones single-copy.
func TestCmaMixedSizes(t *testing.T) {
	useCma(t)
	for _, name := range []string{"one agent", "blocks of two"} {
		t.Run(name, func(t *testing.T) {
			run(t, 4, placements[name], func(c *mpi.Comm) error {
				return errors.Join(cmaPosted(c), cmaUnexpected(c), cmaTruncated(c), cmaUsed(c))
			})
		})
	}
}

func cmaPosted(c *mpi.Comm) error {
	n, me := c.Size(), c.Rank()
	var recvs, sends []*mpi.Request
	bufs := map[[2]int][]byte{}
	for d := 1; d < n; d++ {
		src := (me + n - d) % n
		for i, size := range cmaSizes {
			b := make([]byte, size+d) // larger than needed: Count says how much came
			bufs[[2]int{src, i}] = b
			recvs = append(recvs, mpi.Irecv(c, b, src, i))
		}
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	for d := 1; d < n; d++ {
		dst := (me + d) % n
		for i, size := range cmaSizes {
			msg := pattern(me, i, size)
			switch i % 3 {
			case 0:
				sends = append(sends, mpi.Isend(c, msg, dst, i))
			case 1:
				if err := mpi.Send(c, msg, dst, i); err != nil {
					return err
				}
			default:
				if err := mpi.Ssend(c, msg, dst, i); err != nil {
					return err
				}
			}
		}
	}
	if err := errors.Join(mpi.Waitall(sends...), mpi.Waitall(recvs...)); err != nil {
		return err
	}
	for k, r := range recvs {
		src, i := (me+n-1-k/len(cmaSizes))%n, k%len(cmaSizes)
		st, _ := r.Wait()
		if b := bufs[[2]int{src, i}]; st.Source != src || st.Count != cmaSizes[i] || !bytes.Equal(b[:st.Count], pattern(src, i, cmaSizes[i])) {
			return fmt.Errorf("posted receive %d from rank %d: %d bytes from rank %d, or wrong content", i, src, st.Count, st.Source)
		}
	}
	return nil
}

func cmaUnexpected(c *mpi.Comm) error {
	n, me := c.Size(), c.Rank()
	var sends []*mpi.Request
	for d := 1; d < n; d++ {
		for i, size := range cmaSizes {
			sends = append(sends, mpi.Isend(c, pattern(me, i, size), (me+d)%n, 100+i))
		}
	}
	buf := make([]byte, cmaSizes[len(cmaSizes)-1])
	for k := 0; k < n-1; k++ {
		for i, size := range cmaSizes {
			st, err := c.Probe(mpi.AnySource, 100+i)
			if err != nil {
				return err
			}
			if st.Count != size {
				return fmt.Errorf("probe of message %d: %d bytes, want %d", i, st.Count, size)
			}
			if st, err = mpi.Recv(c, buf, st.Source, 100+i); err != nil {
				return err
			}
			if st.Count != size || !bytes.Equal(buf[:size], pattern(st.Source, i, size)) {
				return fmt.Errorf("unexpected message %d from rank %d: %d bytes, or wrong content", i, st.Source, st.Count)
			}
		}
	}
	return mpi.Waitall(sends...)
}

func cmaTruncated(c *mpi.Comm) error {
	n, me := c.Size(), c.Rank()
	big := 2 * cmaMin
	if err := mpi.Send(c, pattern(me, 0, big), (me+1)%n, 200); err != nil {
		return err
	}
	if err := mpi.Send(c, pattern(me, 1, big), (me+1)%n, 201); err != nil {
		return err
	}
	src := (me + n - 1) % n
	if _, err := mpi.Recv(c, make([]byte, cmaMin), src, 200); !errors.Is(err, mpi.ErrTruncate) {
		return fmt.Errorf("%d bytes into %d: %v, want a truncation", big, cmaMin, err)
	}
	buf := make([]byte, big)
	if _, err := mpi.Recv(c, buf, src, 201); err != nil || !bytes.Equal(buf, pattern(src, 1, big)) {
		return fmt.Errorf("after the truncation: %v, or wrong content", err)
	}
	return nil
}

// cmaUsed: a rank that shares its agent received its large messages from
// those peers single-copy.
func cmaUsed(c *mpi.Comm) error {
	if len(c.ShmPeers()) > 0 && c.CmaIn() == 0 {
		return fmt.Errorf("rank %d received nothing single-copy from %v", c.Rank(), c.ShmPeers())
	}
	return c.Barrier()
}

// TestCmaChunks: a message larger than one process_vm_readv's chunk
// arrives whole into a posted receive and as an unexpected message.
func TestCmaChunks(t *testing.T) {
	useCma(t)
	const size = 9<<20 + 5
	run(t, 2, placements["one agent"], func(c *mpi.Comm) error {
		me, other := c.Rank(), 1-c.Rank()
		buf := make([]byte, size)
		posted := mpi.Irecv(c, buf, other, 0)
		if err := c.Barrier(); err != nil {
			return err
		}
		if err := errors.Join(mpi.Send(c, pattern(me, 0, size), other, 0), mpi.Send(c, pattern(me, 1, size), other, 1)); err != nil {
			return err
		}
		if _, err := posted.Wait(); err != nil || !bytes.Equal(buf, pattern(other, 0, size)) {
			return fmt.Errorf("posted: %v, or wrong content", err)
		}
		if _, err := c.Probe(other, 1); err != nil {
			return err
		}
		if _, err := mpi.Recv(c, buf, other, 1); err != nil || !bytes.Equal(buf, pattern(other, 1, size)) {
			return fmt.Errorf("unexpected: %v, or wrong content", err)
		}
		if c.CmaIn() != 2 {
			return fmt.Errorf("%d messages single-copy, want 2", c.CmaIn())
		}
		return c.Barrier()
	})
}

// TestCmaRefused: when the receiver cannot read the sender's memory, the
// first large message is refused and sent again as copies, and so is every
// later one: all arrive intact, none single-copy.
func TestCmaRefused(t *testing.T) {
	useCma(t)
	defer mpi.RefuseCma()()
	run(t, 2, placements["one agent"], func(c *mpi.Comm) error {
		me, other := c.Rank(), 1-c.Rank()
		var sends []*mpi.Request
		for i, size := range cmaSizes {
			sends = append(sends, mpi.Isend(c, pattern(me, i, size), other, i))
		}
		buf := make([]byte, cmaSizes[len(cmaSizes)-1])
		for i, size := range cmaSizes {
			st, err := mpi.Recv(c, buf, other, i)
			if err != nil {
				return err
			}
			if st.Count != size || !bytes.Equal(buf[:size], pattern(other, i, size)) {
				return fmt.Errorf("message %d: %d bytes, or wrong content", i, st.Count)
			}
		}
		if err := mpi.Waitall(sends...); err != nil {
			return err
		}
		if c.CmaIn() != 0 || !c.CmaOff(other) {
			return fmt.Errorf("rank %d: %d messages single-copy, copies to rank %d: %v", me, c.CmaIn(), other, c.CmaOff(other))
		}
		return c.Barrier()
	})
}

// TestCmaGarbage: a rank writes rendezvous that break the rules into its
// ring to another rank of its agent: a bad address, a skipped token, a pid
// that changes after the first check, a length no message may have, a
// frame of the wrong size. The receiver refuses each, and the job fails
// with the reason, without a crash or a hang.
func TestCmaGarbage(t *testing.T) {
	useCma(t)
	data := bytes.Repeat([]byte("x"), 1000)
	addr := uint64(uintptr(unsafe.Pointer(&data[0])))
	pid := uint32(os.Getpid())
	rdv := func(c *mpi.Comm, seq uint64, total int, at uint64, p uint32, tok uint64) []byte {
		f := make([]byte, proto.HeaderLen+proto.CmaLen)
		r := proto.Cma{Msg: proto.MsgHeader{Dst: 1, Seq: seq, Total: uint64(total)}, Pid: p, Addr: at, Ident: c.CmaIdent(1), Token: tok}
		r.Put(f)
		return f
	}
	for name, junk := range map[string]func(c *mpi.Comm) [][]byte{
		"bad address":   func(c *mpi.Comm) [][]byte { return [][]byte{rdv(c, 0, 100, 4096, pid, 1)} },
		"token skipped": func(c *mpi.Comm) [][]byte { return [][]byte{rdv(c, 0, 100, addr, pid, 2)} },
		"pid changes": func(c *mpi.Comm) [][]byte {
			return [][]byte{rdv(c, 0, 100, addr, pid, 1), rdv(c, 1, 100, addr, pid+1, 2)}
		},
		"too long":  func(c *mpi.Comm) [][]byte { return [][]byte{rdv(c, 0, 1<<41, addr, pid, 1)} },
		"sequence":  func(c *mpi.Comm) [][]byte { return [][]byte{rdv(c, 3, 100, addr, pid, 1)} },
		"truncated": func(c *mpi.Comm) [][]byte { f := rdv(c, 0, 100, addr, pid, 1); f[0]--; return [][]byte{f[:len(f)-1]} },
	} {
		t.Run(name, func(t *testing.T) {
			errs := runErrs(t, 2, placements["one agent"], func(c *mpi.Comm) error {
				if c.Rank() == 0 {
					for _, f := range junk(c) {
						if err := c.ScribbleShm(1, f); err != nil {
							return err
						}
					}
					_, err := mpi.Recv(c, make([]byte, 10), 1, 0)
					return err
				}
				for { // a first valid rendezvous arrives, the rest must not
					if _, err := mpi.Recv(c, make([]byte, 100), 0, 0); err != nil {
						return err
					}
				}
			})
			for r, err := range errs {
				var je *mpi.JobError
				if !errors.As(err, &je) || !strings.Contains(je.Reason, "shared memory") {
					t.Errorf("rank %d: %v, want a job failure about shared memory", r, err)
				} else if testing.Verbose() {
					t.Logf("rank %d: %v", r, je.Reason)
				}
			}
		})
	}
	runtime.KeepAlive(data)
}
