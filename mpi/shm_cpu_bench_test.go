package mpi

import (
	"syscall"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
	"github.com/zorilla-p2p/zorilla/mpi/internal/shm"
)

// ringPair connects two sessions of ranks 0 and 1 of a 2-rank job by two
// rings, as the agent would, without an agent and without standby readers:
// whoever receives reads the ring itself.
func ringPair(tb testing.TB) (a, b *Session) {
	a, b = testSession(2), testSession(2)
	b.rank, b.world.rank = 1, 1
	for _, s := range []*Session{a, b} {
		s.maxData = 512 << 10
		s.shm.out, s.shm.in = make([]*shm.Ring, 2), make([]*inRing, 2)
	}
	link := func(from, to *Session) {
		f, err := shm.Create("bench", 1<<20)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		w, err := shm.Map(int(f.Fd()))
		if err != nil {
			tb.Fatal(err)
		}
		r, err := shm.Map(int(f.Fd()))
		if err != nil {
			tb.Fatal(err)
		}
		from.shm.out[to.rank] = w
		ir := &inRing{src: from.rank, r: r}
		to.shm.in[from.rank], to.shm.list = ir, append(to.shm.list, ir)
		tb.Cleanup(func() { w.Unmap(); r.Unmap() })
	}
	link(a, b)
	link(b, a)
	return a, b
}

// standby starts the standby ring readers of sessions made by ringPair, as
// ShmOn does; they end with the sessions (end).
func standby(tb testing.TB, ss ...*Session) {
	for _, s := range ss {
		for _, ir := range s.shm.list {
			s.shm.readers.Add(1)
			go s.shmReadLoop(ir)
		}
		tb.Cleanup(func() {
			end(s, ErrAgentLost)
			s.shm.readers.Wait()
		})
	}
}

// end ends a session made by ringPair with err, as its reader would.
func end(s *Session, err error) {
	if isClosed(s.dead) {
		return
	}
	s.rerr = err
	close(s.dead)
	for _, ir := range s.shm.list {
		ir.r.WakeReader()
	}
}

// BenchmarkShmPathCPU: the processor time of the MPI layer's part of a
// small co-located message, apart from any waiting: one goroutine sends
// 8 bytes from rank 0 to rank 1 and receives them there (the receive finds
// the message in its ring), then back. Per op: two messages. The same with
// the rings alone (one frame written and read) is BenchmarkShmRingCPU.
func BenchmarkShmPathCPU(b *testing.B) {
	s0, s1 := ringPair(b)
	msg := make([]byte, 8)
	b.ReportAllocs()
	defer cpuPerMsg(b)()
	for b.Loop() {
		for _, p := range [2][2]*Session{{s0, s1}, {s1, s0}} {
			if err := Send(p[0].world, msg, p[1].rank, 3); err != nil {
				b.Fatal(err)
			}
			if st, err := Recv(p[1].world, msg, p[0].rank, 3); err != nil || st.Bytes != 8 {
				b.Fatal(st, err)
			}
		}
	}
}

// BenchmarkShmRingCPU: the rings' part of BenchmarkShmPathCPU, an 8-byte
// message framed as the library frames it, written, then read back in the
// library's three reads (frame header, message header, data).
func BenchmarkShmRingCPU(b *testing.B) {
	s0, s1 := ringPair(b)
	const hl = proto.HeaderLen + proto.MsgHeaderLen
	frame := make([]byte, hl+8)
	never := func() error { return nil }
	defer cpuPerMsg(b)()
	for b.Loop() {
		for _, p := range [2][2]*Session{{s0, s1}, {s1, s0}} {
			if err := p[0].shm.out[p[1].rank].WriteFrame(frame[:hl], frame[hl:], never); err != nil {
				b.Fatal(err)
			}
			ir := p[1].shm.in[p[0].rank]
			for _, part := range [][]byte{frame[:proto.HeaderLen], frame[proto.HeaderLen:hl], frame[hl:]} {
				if err := ir.readFull(part, never); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// cpuPerMsg reports the processor time of the process per message (two
// per op), which a loaded machine does not inflate as it does the time on
// the clock; call the function it returns when the loop is done.
func cpuPerMsg(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(2*b.N), "cpu-ns/msg")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
