package mpi_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/zorilla-p2p/zorilla/mpi"
)

func TestRing(t *testing.T) {
	for name, place := range placements {
		t.Run(name, func(t *testing.T) {
			run(t, 5, place, func(c *mpi.Comm) error {
				n, me := c.Size(), c.Rank()
				out := []int64{int64(me)}
				in := make([]int64, 1)
				next, prev := (me+1)%n, (me-1+n)%n
				st, err := mpi.Sendrecv(c, out, next, 7, in, prev, 7)
				if err != nil {
					return err
				}
				if in[0] != int64(prev) || st.Source != prev || st.Tag != 7 || st.Count != 1 || st.Bytes != 8 {
					return fmt.Errorf("got %v status %+v from %d", in, st, prev)
				}
				return nil
			})
		})
	}
}

// TestWildcards: rank 0 takes one message from every other rank with
// AnySource and AnyTag, and learns who sent what from the status.
func TestWildcards(t *testing.T) {
	run(t, 6, nil, func(c *mpi.Comm) error {
		if c.Rank() != 0 {
			return mpi.Send(c, []int32{int32(c.Rank() * 10)}, 0, 100+c.Rank())
		}
		seen := map[int]bool{}
		for i := 1; i < c.Size(); i++ {
			buf := make([]int32, 1)
			st, err := mpi.Recv(c, buf, mpi.AnySource, mpi.AnyTag)
			if err != nil {
				return err
			}
			if st.Tag != 100+st.Source || buf[0] != int32(st.Source*10) || seen[st.Source] {
				return fmt.Errorf("status %+v with %v", st, buf)
			}
			seen[st.Source] = true
		}
		return nil
	})
}

// TestOrdering: several senders send many messages of mixed sizes (some
// spanning many fragments) with the same tag; the receiver, taking them with
// AnySource, sees each sender's messages in the order they were sent.
func TestOrdering(t *testing.T) {
	const count = 60
	sizes := []int{0, 1, 100, 200_000, 8, 300_000, 3}
	for name, place := range placements {
		t.Run(name, func(t *testing.T) {
			run(t, 4, place, func(c *mpi.Comm) error {
				if c.Rank() != 0 {
					var reqs []*mpi.Request
					for i := 0; i < count; i++ {
						msg := pattern(c.Rank(), i, sizes[i%len(sizes)])
						if i%2 == 0 {
							reqs = append(reqs, mpi.Isend(c, msg, 0, 1))
						} else if err := mpi.Send(c, msg, 0, 1); err != nil {
							return err
						}
					}
					return mpi.Waitall(reqs...)
				}
				next := make([]int, c.Size())
				buf := make([]byte, 300_000)
				for i := 0; i < count*(c.Size()-1); i++ {
					st, err := mpi.Recv(c, buf, mpi.AnySource, 1)
					if err != nil {
						return err
					}
					k := next[st.Source]
					if want := pattern(st.Source, k, sizes[k%len(sizes)]); !bytes.Equal(buf[:st.Count], want) {
						return fmt.Errorf("message %d from rank %d: %d bytes, not the %d sent", k, st.Source, st.Count, len(want))
					}
					next[st.Source]++
				}
				return nil
			})
		})
	}
}

// pattern is the content of message i of rank r.
func pattern(r, i, n int) []byte {
	b := make([]byte, n)
	rng := rand.New(rand.NewPCG(uint64(r), uint64(i)))
	for j := range b {
		b[j] = byte(rng.Uint32())
	}
	return b
}

// TestTagSelection: a receive for tag 2 takes the later message with tag 2
// before the earlier one with tag 1 (only equal tags are ordered).
func TestTagSelection(t *testing.T) {
	run(t, 2, nil, func(c *mpi.Comm) error {
		if c.Rank() == 0 {
			if err := mpi.Send(c, []byte("one"), 1, 1); err != nil {
				return err
			}
			return mpi.Send(c, []byte("two"), 1, 2)
		}
		buf := make([]byte, 8)
		st, err := mpi.Recv(c, buf, 0, 2)
		if err != nil || string(buf[:st.Count]) != "two" {
			return fmt.Errorf("tag 2: %q %v", buf[:st.Count], err)
		}
		st, err = mpi.Recv(c, buf, 0, 1)
		if err != nil || string(buf[:st.Count]) != "one" {
			return fmt.Errorf("tag 1: %q %v", buf[:st.Count], err)
		}
		return nil
	})
}

// TestNonBlocking: an Irecv posted before anything is sent is not complete;
// it completes once the message is sent; Waitall collects a batch.
func TestNonBlocking(t *testing.T) {
	for name, place := range placements {
		t.Run(name, func(t *testing.T) {
			run(t, 2, place, func(c *mpi.Comm) error {
				if c.Rank() == 0 {
					if _, err := mpi.Recv(c, []byte{0}, 1, 9); err != nil { // wait for "go"
						return err
					}
					var reqs []*mpi.Request
					for i := 0; i < 10; i++ {
						reqs = append(reqs, mpi.Isend(c, []float64{float64(i)}, 1, i))
					}
					return mpi.Waitall(reqs...)
				}
				bufs := make([][]float64, 10)
				var reqs []*mpi.Request
				for i := 9; i >= 0; i-- { // posted in reverse tag order
					bufs[i] = make([]float64, 1)
					reqs = append(reqs, mpi.Irecv(c, bufs[i], 0, i))
				}
				if done, _, err := reqs[0].Test(); done || err != nil {
					return fmt.Errorf("receive complete before anything was sent: %v", err)
				}
				if err := mpi.Send(c, []byte{1}, 0, 9); err != nil {
					return err
				}
				if err := mpi.Waitall(reqs...); err != nil {
					return err
				}
				for i, b := range bufs {
					if b[0] != float64(i) {
						return fmt.Errorf("tag %d got %v", i, b)
					}
				}
				done, st, err := reqs[0].Test()
				if !done || err != nil || st.Tag != 9 {
					return fmt.Errorf("Test after Wait: %v %+v %v", done, st, err)
				}
				return nil
			})
		})
	}
}

// TestLargeAndSelf: a message of many fragments between agents and to
// oneself arrives intact, as typed data.
func TestLargeAndSelf(t *testing.T) {
	const n = 1 << 19 // 4 MiB of float64
	run(t, 2, nil, func(c *mpi.Comm) error {
		out := make([]float64, n)
		for i := range out {
			out[i] = float64(i*c.Rank()) + 0.5
		}
		self := mpi.Isend(c, out, c.Rank(), 3)
		in := make([]float64, n)
		if _, err := mpi.Recv(c, in, c.Rank(), 3); err != nil {
			return err
		}
		if _, err := self.Wait(); err != nil {
			return err
		}
		other := 1 - c.Rank()
		got := make([]float64, n)
		if _, err := mpi.Sendrecv(c, out, other, 4, got, other, 4); err != nil {
			return err
		}
		for i := range got {
			if in[i] != out[i] || got[i] != float64(i*other)+0.5 {
				return fmt.Errorf("element %d: self %v, from %d %v", i, in[i], other, got[i])
			}
		}
		return nil
	})
}

// TestTypes sends every element type through.
func TestTypes(t *testing.T) {
	run(t, 2, nil, func(c *mpi.Comm) error {
		if c.Rank() == 0 {
			return errors.Join(
				mpi.Send(c, []int8{-1, 2}, 1, 0),
				mpi.Send(c, []uint16{65535}, 1, 0),
				mpi.Send(c, []int32{-7, 1 << 30}, 1, 0),
				mpi.Send(c, []uint64{1 << 63}, 1, 0),
				mpi.Send(c, []float32{1.5, -2.25}, 1, 0),
			)
		}
		i8, u16, i32 := make([]int8, 2), make([]uint16, 1), make([]int32, 2)
		u64, f32 := make([]uint64, 1), make([]float32, 2)
		for _, err := range []error{
			second(mpi.Recv(c, i8, 0, 0)), second(mpi.Recv(c, u16, 0, 0)), second(mpi.Recv(c, i32, 0, 0)),
			second(mpi.Recv(c, u64, 0, 0)), second(mpi.Recv(c, f32, 0, 0)),
		} {
			if err != nil {
				return err
			}
		}
		if i8[0] != -1 || i8[1] != 2 || u16[0] != 65535 || i32[0] != -7 || i32[1] != 1<<30 ||
			u64[0] != 1<<63 || f32[0] != 1.5 || f32[1] != -2.25 {
			return fmt.Errorf("got %v %v %v %v %v", i8, u16, i32, u64, f32)
		}
		return nil
	})
}

func second[A any](_ A, err error) error { return err }

// TestProbe: Probe reports a message's size before it is received, and
// Iprobe sees nothing when nothing is there.
func TestProbe(t *testing.T) {
	run(t, 3, nil, func(c *mpi.Comm) error {
		switch c.Rank() {
		case 1:
			return mpi.Send(c, pattern(1, 0, 12345), 0, 5)
		case 2:
			return nil
		}
		if ok, _, err := c.Iprobe(2, mpi.AnyTag); ok || err != nil {
			return fmt.Errorf("Iprobe found a message rank 2 never sent: %v", err)
		}
		st, err := c.Probe(mpi.AnySource, 5)
		if err != nil {
			return err
		}
		if st.Source != 1 || st.Count != 12345 {
			return fmt.Errorf("probe status %+v", st)
		}
		buf := make([]byte, st.Count)
		if _, err := mpi.Recv(c, buf, st.Source, st.Tag); err != nil {
			return err
		}
		if !bytes.Equal(buf, pattern(1, 0, 12345)) {
			return fmt.Errorf("probed message corrupted")
		}
		return nil
	})
}

// TestTruncateAndBadArgs: a message longer than the buffer and invalid
// arguments give errors, and the ranks keep working.
func TestTruncateAndBadArgs(t *testing.T) {
	run(t, 2, nil, func(c *mpi.Comm) error {
		if err := mpi.Send(c, []byte{1}, 5, 0); !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("send to rank 5: %v", err)
		}
		if err := mpi.Send(c, []byte{1}, 0, -3); !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("negative tag: %v", err)
		}
		if _, err := mpi.Recv(c, []byte{}, -2, 0); !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("source -2: %v", err)
		}
		if c.Rank() == 0 {
			return errors.Join(mpi.Send(c, []byte("too long"), 1, 0), mpi.Send(c, []byte("ok"), 1, 0))
		}
		small := make([]byte, 2)
		if _, err := mpi.Recv(c, small, 0, 0); !errors.Is(err, mpi.ErrTruncate) {
			return fmt.Errorf("truncation: %v", err)
		}
		odd := make([]int32, 1)
		if _, err := mpi.Recv(c, odd, 0, 0); !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("2 bytes into int32: %v", err)
		}
		return nil
	})
}
