package shm

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The floor of an all-to-all exchange after compute among Go processes on
// one host (BenchmarkAlltoallvFloor): what NAS IS's exchange could cost
// with no MPI library at all, each rank one thread. A shared memfd holds
// counters on lines of their own: entered (a rank's send buffer is
// filled and it takes blocks), offer (a sender lets a receiver take its
// block) and consumed (the receiver has it). How a block moves (copy):
// "shared", the send buffers live in the memfd and a receiver copies its
// block straight out (one copy, no system call, no header, no matching:
// less than any library does); "cma", the send buffers are private and a
// receiver reads them with process_vm_readv, as Open MPI's single-copy
// path does; "ring", each pair has a ring of the library's size and the
// sender copies in what fits while the receiver copies out what is there,
// the library's two copies. When a block may move (protocol): "pull", as
// soon as its sender entered; "ready", once its receiver entered too (the
// library's ready messages); "serial", one destination at a time (one
// writer waiting for each block to be taken). Between looks that moved
// nothing a rank either yields (sched_yield, as Open MPI's progress loop
// does) or sleeps on a futex of its own (wait), which every peer that moves
// something for it rings.

// envExchangeFloor makes the test binary a rank of BenchmarkAlltoallvFloor:
// "rank,ranks,block,calls,work,wait,copy,protocol", the memfd as file 3.
const envExchangeFloor = "ZORILLA_SHM_EXCHANGE_FLOOR"

func init() {
	spec := os.Getenv(envExchangeFloor)
	if spec == "" {
		return
	}
	x, err := parseExchangeFloor(spec)
	if err == nil {
		_, err = x.run(3)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "exchange floor:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// exchangeFloor is one rank's part of the floor.
type exchangeFloor struct {
	rank, ranks, block, calls int
	work                      time.Duration
	sleep                     bool // wait on a futex at once, not in a yield loop
	// copy: "shared" (send buffers in the shared file, the receiver copies
	// out of them), "cma" (send buffers private, the receiver reads them
	// with process_vm_readv) or "ring" (send buffers private, each block
	// copied through a ring of floorRingCap bytes a pair: the library's
	// two copies).
	copy string
	// protocol: "pull" (a receiver pulls its block as soon as the sender
	// entered the call), "ready" (the sender offers each block once its
	// receiver entered, as the library's ready messages do) or "serial"
	// (the sender offers one block at a time, the next once the last was
	// pulled, as the library's one writer waiting for each ack does).
	protocol string
}

func (x exchangeFloor) spec() string {
	wait := "yield"
	if x.sleep {
		wait = "sleep"
	}
	return fmt.Sprintf("%d,%d,%d,%d,%s,%s,%s,%s", x.rank, x.ranks, x.block, x.calls, x.work, wait, x.copy, x.protocol)
}

func parseExchangeFloor(spec string) (exchangeFloor, error) {
	f := strings.Split(spec, ",")
	if len(f) != 8 {
		return exchangeFloor{}, fmt.Errorf("spec %q: want 8 fields", spec)
	}
	var n [4]int
	for i := range n {
		v, err := strconv.Atoi(f[i])
		if err != nil {
			return exchangeFloor{}, fmt.Errorf("spec %q: %w", spec, err)
		}
		n[i] = v
	}
	work, err := time.ParseDuration(f[4])
	if err != nil {
		return exchangeFloor{}, fmt.Errorf("spec %q: %w", spec, err)
	}
	return exchangeFloor{n[0], n[1], n[2], n[3], work, f[5] == "sleep", f[6], f[7]}, nil
}

// The shared file: a control page of cache lines, then each rank's send
// buffer of ranks blocks.
const floorLine = 64

// floorRingCap is the capacity of a ring of the "ring" copy, the
// library's default (mpi/router's ShmRing).
const floorRingCap = 1 << 20

func (x exchangeFloor) ctlSize() int { return (4*x.ranks*x.ranks + 5*x.ranks) * floorLine }
func (x exchangeFloor) size() int {
	return x.ctlSize() + x.ranks*x.ranks*x.block*4 + x.ranks*x.ranks*floorRingCap
}

// exchangeMem is the mapped file seen by one rank.
type exchangeMem struct {
	x   exchangeFloor
	mem []byte
}

func (m exchangeMem) word(line int) *uint32 {
	return (*uint32)(unsafe.Pointer(&m.mem[line*floorLine]))
}

// entered[i]: the last call rank i entered (its send buffer is filled, its
// receive buffer ready).
func (m exchangeMem) entered(i int) *uint32 { return m.word(i) }

// offer[i][j]: the last call in which rank i offered rank j its block.
func (m exchangeMem) offer(i, j int) *uint32 {
	return m.word(5*m.x.ranks + m.x.ranks*m.x.ranks + i*m.x.ranks + j)
}

// consumed[j][i]: the last call whose block rank j copied out of rank i's buffer.
func (m exchangeMem) consumed(j, i int) *uint32 { return m.word(m.x.ranks + j*m.x.ranks + i) }

// bell[i] changes whenever something rank i may wait for happened;
// asleep[i] says rank i may be in futex_wait on it.
func (m exchangeMem) bell(i int) *uint32   { return m.word(m.x.ranks + m.x.ranks*m.x.ranks + i) }
func (m exchangeMem) asleep(i int) *uint32 { return m.word(2*m.x.ranks + m.x.ranks*m.x.ranks + i) }

// where[i]: the pid and address of rank i's private send buffer (cma).
func (m exchangeMem) where(i int) (pid, addr *uint64) {
	w := m.x.ranks*m.x.ranks + 3*m.x.ranks + 2*i
	return (*uint64)(unsafe.Pointer(m.word(w))), (*uint64)(unsafe.Pointer(m.word(w + 1)))
}

// head[i][j] and tail[i][j]: the bytes rank i wrote into the ring to
// rank j, and rank j read from it, over all calls ("ring" copy).
func (m exchangeMem) head(i, j int) *uint64 {
	return (*uint64)(unsafe.Pointer(m.word(5*m.x.ranks + 2*m.x.ranks*m.x.ranks + i*m.x.ranks + j)))
}

func (m exchangeMem) tail(i, j int) *uint64 {
	return (*uint64)(unsafe.Pointer(m.word(5*m.x.ranks + 3*m.x.ranks*m.x.ranks + i*m.x.ranks + j)))
}

// pairRing is the data of the ring from rank i to rank j.
func (m exchangeMem) pairRing(i, j int) []byte {
	off := m.x.ctlSize() + m.x.ranks*m.x.ranks*m.x.block*4 + (i*m.x.ranks+j)*floorRingCap
	return m.mem[off : off+floorRingCap]
}

func (m exchangeMem) sendBuf(i int) []int32 {
	n := m.x.ranks * m.x.block
	off := m.x.ctlSize() + i*n*4
	return unsafe.Slice((*int32)(unsafe.Pointer(&m.mem[off])), n)
}

// ring tells rank i something it may wait for happened.
func (m exchangeMem) ring(i int) {
	atomic.AddUint32(m.bell(i), 1)
	if atomic.LoadUint32(m.asleep(i)) != 0 {
		futexWake(m.bell(i))
	}
}

// waitFor waits until done holds, or gives up after floorGiveUp.
func (m exchangeMem) waitFor(done func() bool) error {
	me := m.x.rank
	start := time.Now()
	for {
		if !m.x.sleep {
			if done() {
				return nil
			}
			_, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		} else {
			seen := atomic.LoadUint32(m.bell(me))
			atomic.StoreUint32(m.asleep(me), 1)
			if done() {
				atomic.StoreUint32(m.asleep(me), 0)
				return nil
			}
			futexWait(m.bell(me), seen, Nap, false)
			atomic.StoreUint32(m.asleep(me), 0)
		}
		if time.Since(start) > floorGiveUp {
			return fmt.Errorf("rank %d: no progress within %v", me, floorGiveUp)
		}
	}
}

// run maps the file at fd and does the calls, returning how long each
// exchange took on this rank.
func (x exchangeFloor) run(fd int) ([]time.Duration, error) {
	mem, err := unix.Mmap(fd, 0, x.size(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map: %w", err)
	}
	defer unix.Munmap(mem)
	m := exchangeMem{x, mem}
	me, n, k := x.rank, x.ranks, x.block
	send, recv := m.sendBuf(me), make([]int32, n*k)
	if x.copy != "shared" {
		send = make([]int32, n*k)
		pid, addr := m.where(me)
		atomic.StoreUint64(addr, uint64(uintptr(unsafe.Pointer(&send[0]))))
		atomic.StoreUint64(pid, uint64(os.Getpid()))
	}
	took := make([]time.Duration, x.calls)
	for call := 1; call <= x.calls; call++ {
		floorCompute(send, x.work)
		for j := range n {
			send[j*k] = floorMark(me, j, call)
		}
		start := time.Now()
		c := floorCall{m: m, call: uint32(call), recv: recv}
		if err := c.exchange(send); err != nil {
			return nil, fmt.Errorf("call %d: %w", call, err)
		}
		took[call-1] = time.Since(start)
		for j := range n {
			if got, want := recv[j*k], floorMark(j, me, call); got != want {
				return nil, fmt.Errorf("call %d: block from rank %d starts with %#x, want %#x", call, j, got, want)
			}
		}
	}
	return took, nil
}

// copyBlock copies this rank's block of rank j's send buffer into dst.
func (m exchangeMem) copyBlock(dst []int32, j int) error {
	me, k := m.x.rank, m.x.block
	if m.x.copy == "shared" {
		copy(dst, m.sendBuf(j)[me*k:(me+1)*k])
		return nil
	}
	pid, addr := m.where(j)
	return ReadFrom(int(atomic.LoadUint64(pid)), atomic.LoadUint64(addr)+uint64(me*k*4),
		unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), len(dst)*4))
}

// floorCall is one rank's state in one exchange.
type floorCall struct {
	m          exchangeMem
	call       uint32
	recv       []int32
	pulled     []bool // by source: its block is here
	offered    []bool // by destination: it may pull its block (ready, serial)
	nextOffer  int    // serial: the destination offered last is me+nextOffer
	pulledLeft int
	send       []byte // this rank's send buffer ("ring")
	sent, got  []int  // by peer: bytes of this call written to it, read from it ("ring")
}

// exchange is one call: it says it entered, copies its own block, and then
// makes whatever progress it can (offers, pulls) until every block is
// here and every peer has its block, waiting when it can make none.
func (c *floorCall) exchange(send []int32) error {
	m, me, n, k := c.m, c.m.x.rank, c.m.x.ranks, c.m.x.block
	c.pulled, c.offered, c.pulledLeft, c.nextOffer = make([]bool, n), make([]bool, n), n-1, 0
	c.pulled[me] = true
	if m.x.copy == "ring" {
		c.send = unsafe.Slice((*byte)(unsafe.Pointer(&send[0])), len(send)*4)
		c.sent, c.got = make([]int, n), make([]int, n)
		if m.x.protocol == "pull" { // the rings take the blocks before their readers come
			for j := range n {
				c.offered[j] = j != me
			}
		}
	}
	atomic.StoreUint32(m.entered(me), c.call)
	for j := range n {
		if j != me {
			m.ring(j)
		}
	}
	copy(c.recv[me*k:(me+1)*k], send[me*k:(me+1)*k])
	for {
		progressed, err := c.step()
		if err != nil {
			return err
		}
		if c.done() {
			return nil
		}
		if !progressed {
			if err := m.waitFor(c.canStep); err != nil {
				return err
			}
		}
	}
}

// offerable reports the destination this rank may offer its block to now, if any.
func (c *floorCall) offerable() (int, bool) {
	m, me, n := c.m, c.m.x.rank, c.m.x.ranks
	switch m.x.protocol {
	case "ready":
		for i := 1; i < n; i++ {
			j := (me + i) % n
			if !c.offered[j] && atomic.LoadUint32(m.entered(j)) >= c.call {
				return j, true
			}
		}
	case "serial":
		if c.nextOffer > 0 && c.nextOffer < n && atomic.LoadUint32(m.consumed((me+c.nextOffer)%n, me)) < c.call {
			return 0, false // the last destination offered has not pulled yet
		}
		if c.nextOffer+1 < n {
			j := (me + c.nextOffer + 1) % n
			if atomic.LoadUint32(m.entered(j)) >= c.call {
				return j, true
			}
		}
	}
	return 0, false
}

// pullable reports a source whose block this rank may pull now, if any.
func (c *floorCall) pullable() (int, bool) {
	m, me, n := c.m, c.m.x.rank, c.m.x.ranks
	for i := 1; i < n; i++ {
		j := (me - i + n) % n
		if c.pulled[j] {
			continue
		}
		if m.x.protocol == "pull" && atomic.LoadUint32(m.entered(j)) >= c.call ||
			m.x.protocol != "pull" && atomic.LoadUint32(m.offer(j, me)) >= c.call {
			return j, true
		}
	}
	return 0, false
}

// step makes every offer and pull it can.
func (c *floorCall) step() (progressed bool, err error) {
	m, me, k := c.m, c.m.x.rank, c.m.x.block
	if m.x.copy == "ring" {
		return c.stepRing(), nil
	}
	for {
		if j, ok := c.offerable(); ok {
			c.offered[j] = true
			c.nextOffer++
			atomic.StoreUint32(m.offer(me, j), c.call)
			m.ring(j)
			progressed = true
			continue
		}
		if j, ok := c.pullable(); ok {
			if err := m.copyBlock(c.recv[j*k:(j+1)*k], j); err != nil {
				return progressed, err
			}
			c.pulled[j] = true
			c.pulledLeft--
			atomic.StoreUint32(m.consumed(me, j), c.call)
			m.ring(j)
			progressed = true
			continue
		}
		return progressed, nil
	}
}

// done: every block is here and every peer pulled this rank's (or, through
// rings, it is written).
func (c *floorCall) done() bool {
	m, me, n := c.m, c.m.x.rank, c.m.x.ranks
	if c.pulledLeft > 0 {
		return false
	}
	if m.x.copy == "ring" {
		for j := range n {
			if j != me && c.sent[j] < m.x.block*4 {
				return false
			}
		}
		return true
	}
	for j := range n {
		if j != me && atomic.LoadUint32(m.consumed(j, me)) < c.call {
			return false
		}
	}
	return true
}

func (c *floorCall) canStep() bool {
	if c.m.x.copy == "ring" {
		_, offer := c.offerable()
		return offer || c.ringMoves(false) || c.done()
	}
	_, offer := c.offerable()
	_, pull := c.pullable()
	return offer || pull || c.done()
}

// stepRing makes every offer it can, then writes into the rings with room
// and reads from the rings with data until neither moves.
func (c *floorCall) stepRing() (progressed bool) {
	for {
		if j, ok := c.offerable(); ok {
			c.offered[j] = true
			c.nextOffer++
			progressed = true
			continue
		}
		if !c.ringMoves(true) {
			return progressed
		}
		progressed = true
	}
}

// ringMoves reports whether a ring can take or give bytes now, and with
// move, moves them: as much as fits into each ring this rank may write to,
// as much as there is out of each ring it reads from.
func (c *floorCall) ringMoves(move bool) bool {
	m, me, n, b := c.m, c.m.x.rank, c.m.x.ranks, c.m.x.block*4
	base := uint64(c.call-1) * uint64(b) // every call moves b bytes a pair
	moved := false
	for i := 1; i < n; i++ {
		j := (me + i) % n
		if c.offered[j] && c.sent[j] < b {
			head, tail := base+uint64(c.sent[j]), atomic.LoadUint64(m.tail(me, j))
			room := floorRingCap - int(head-tail)
			at := int(head % floorRingCap)
			w := min(room, b-c.sent[j], floorRingCap-at)
			if w > 0 {
				if !move {
					return true
				}
				copy(m.pairRing(me, j)[at:at+w], c.send[j*b+c.sent[j]:])
				c.sent[j] += w
				atomic.StoreUint64(m.head(me, j), head+uint64(w))
				m.ring(j)
				moved = true
			}
		}
		src := (me - i + n) % n
		if c.got[src] < b {
			tail, head := base+uint64(c.got[src]), atomic.LoadUint64(m.head(src, me))
			at := int(tail % floorRingCap)
			r := min(int(head-tail), floorRingCap-at, b-c.got[src]) // (the next call's bytes may follow)
			if r > 0 {
				if !move {
					return true
				}
				dst := unsafe.Slice((*byte)(unsafe.Pointer(&c.recv[0])), len(c.recv)*4)
				copy(dst[src*b+c.got[src]:src*b+c.got[src]+r], m.pairRing(src, me)[at:at+r])
				c.got[src] += r
				atomic.StoreUint64(m.tail(src, me), tail+uint64(r))
				if c.got[src] == b {
					c.pulled[src] = true
					c.pulledLeft--
					atomic.StoreUint32(m.consumed(me, src), c.call)
				}
				m.ring(src)
				moved = true
			}
		}
	}
	return moved
}

func floorMark(i, j, call int) int32 { return int32(i<<24 | j<<16 | call&0xffff) }

// floorCompute passes over buf until d has passed, as examples/alltoallv.
func floorCompute(buf []int32, d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
		for k := range buf {
			buf[k] += int32(k)
		}
	}
}

// BenchmarkAlltoallvFloor runs the exchange floor, by default on 4 ranks
// with 2 MiB blocks after 15 ms of compute (IS class A's exchange on 4
// ranks, as examples/alltoallv times it; envFloorShape sets another), one
// call per b.N, and reports rank 0's median and 90th percentile exchange.
// Compare, in the same rounds:
//
//	go test -run '^$' -bench AlltoallvFloor -benchtime 100x ./mpi/internal/shm
//	zorilla demo --agents 1 --procs 4 -n 4 -a concentrate --program ./alltoallv 524288 100 15ms
func BenchmarkAlltoallvFloor(b *testing.B) {
	shape, err := floorShape(os.Getenv(envFloorShape))
	if err != nil {
		b.Fatal(err)
	}
	for _, protocol := range []string{"pull", "ready", "serial"} {
		for _, v := range []struct{ wait, copy string }{{"yield", "shared"}, {"sleep", "shared"}, {"sleep", "cma"}, {"yield", "ring"}, {"sleep", "ring"}} {
			b.Run("protocol="+protocol+"/wait="+v.wait+"/copy="+v.copy, func(b *testing.B) {
				x := shape
				x.calls, x.sleep, x.copy, x.protocol = b.N, v.wait == "sleep", v.copy, protocol
				took := runExchangeFloor(b, x)
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-median")
				b.ReportMetric(float64(took[len(took)*9/10].Microseconds())/1000, "ms-p90")
			})
		}
	}
}

// envFloorShape sets BenchmarkAlltoallvFloor's ranks, int32s a block and
// compute between calls, as alltoallv's arguments: "2 2097152 12ms" is IS
// class A's exchange on 2 ranks.
const envFloorShape = "ZORILLA_SHM_FLOOR_SHAPE"

func floorShape(v string) (exchangeFloor, error) {
	x := exchangeFloor{ranks: 4, block: 512 << 10, work: 15 * time.Millisecond}
	if v == "" {
		return x, nil
	}
	var work string
	if _, err := fmt.Sscan(v, &x.ranks, &x.block, &work); err != nil {
		return x, fmt.Errorf("%s=%q: want RANKS BLOCK WORK: %w", envFloorShape, v, err)
	}
	d, err := time.ParseDuration(work)
	if err != nil || x.ranks < 1 || x.ranks > 16 || x.block < 1 || x.block > 16<<20 {
		return x, fmt.Errorf("%s=%q: want 1..16 ranks, 1..%d int32s a block and a duration", envFloorShape, v, 16<<20)
	}
	x.work = d
	return x, nil
}

// runExchangeFloor runs x with this process as rank 0 and the others as
// children, and returns rank 0's exchange times.
func runExchangeFloor(tb testing.TB, x exchangeFloor) []time.Duration {
	fd, err := unix.MemfdCreate("exchange-floor", unix.MFD_CLOEXEC)
	if err != nil {
		tb.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "exchange-floor")
	defer f.Close()
	if err := unix.Ftruncate(fd, int64(x.size())); err != nil {
		tb.Fatal(err)
	}
	var peers []*exec.Cmd
	for r := 1; r < x.ranks; r++ {
		peer := x
		peer.rank = r
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envExchangeFloor+"="+peer.spec())
		cmd.ExtraFiles = []*os.File{f}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		peers = append(peers, cmd)
	}
	runtime.LockOSThread()
	took, err := x.run(fd)
	runtime.UnlockOSThread()
	for _, p := range peers {
		if werr := p.Wait(); werr != nil && err == nil {
			err = fmt.Errorf("rank: %w", werr)
		}
	}
	if err != nil {
		tb.Fatal(err)
	}
	return took
}

// TestAlltoallvFloor checks the floor moves every block where it belongs,
// with both ways of waiting, on 1 to 4 ranks.
func TestAlltoallvFloor(t *testing.T) {
	copies := []string{"shared", "cma", "ring"}
	for _, protocol := range []string{"pull", "ready", "serial"} {
		for _, sleep := range []bool{false, true} {
			for n := 1; n <= 4; n++ {
				x := exchangeFloor{ranks: n, block: 100_000, calls: 20, sleep: sleep, copy: copies[n%3], protocol: protocol}
				if took := runExchangeFloor(t, x); len(took) != x.calls {
					t.Fatalf("%s: %d calls timed, want %d", x.spec(), len(took), x.calls)
				}
			}
		}
	}
}
