package mpi_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// affine is an associative operation that is not commutative: each element
// packs the map x -> a*x + b (mod affineMod) as a<<32 | b, and inout op in
// is "inout, then in". A reduction in any order other than rank order gives
// another map.
func affine(inout, in []int64) {
	for i := range inout {
		a1, b1 := inout[i]>>32, inout[i]&0xffffffff
		a2, b2 := in[i]>>32, in[i]&0xffffffff
		inout[i] = (a1*a2%affineMod)<<32 | (a2*b1+b2)%affineMod
	}
}

const affineMod = 65521

// affineOf is rank r's map for element i.
func affineOf(r, i int) int64 { return int64(r+2+i)<<32 | int64(3*r+i+1) }

// affineFold is the maps of ranks in order, combined in rank order.
func affineFold(ranks []int, i int) int64 {
	acc := []int64{1 << 32} // identity
	for _, r := range ranks {
		affine(acc, []int64{affineOf(r, i)})
	}
	return acc[0]
}

// sizesAndLayouts runs fn on every size from 1 to 9 on every placement.
func sizesAndLayouts(t *testing.T, fn func(c *mpi.Comm) error) {
	for _, layout := range []string{"one agent", "spread", "blocks"} {
		for n := 1; n <= 9; n++ {
			t.Run(fmt.Sprintf("%s/%d", layout, n), func(t *testing.T) {
				run(t, n, placements[layout], fn)
			})
		}
	}
}

// TestDupKeepsTrafficApart: a message sent on a duplicate never matches a
// receive posted on the original, even one with both wildcards posted
// before it was sent.
func TestDupKeepsTrafficApart(t *testing.T) {
	sizesAndLayouts(t, func(c *mpi.Comm) error {
		d, err := c.Dup()
		if err != nil {
			return err
		}
		if d.Rank() != c.Rank() || d.Size() != c.Size() {
			return fmt.Errorf("dup is rank %d of %d", d.Rank(), d.Size())
		}
		n, r := c.Size(), c.Rank()
		orig := make([]int32, 1)
		wild := mpi.Irecv(c, orig, mpi.AnySource, mpi.AnyTag)
		if err := c.Barrier(); err != nil { // every wildcard receive is posted
			return err
		}
		if err := mpi.Send(d, []int32{int32(100 + r)}, (r+1)%n, 5); err != nil {
			return err
		}
		got := make([]int32, 1)
		st, err := mpi.Recv(d, got, (r-1+n)%n, 5)
		if err != nil {
			return err
		}
		if got[0] != int32(100+(r-1+n)%n) || st.Source != (r-1+n)%n {
			return fmt.Errorf("dup got %d from %d", got[0], st.Source)
		}
		if done, st, _ := wild.Test(); done && st.Tag != 6 { // others may have sent on the original already
			return fmt.Errorf("a receive on the original took the duplicate's message (%d)", orig[0])
		}
		if err := mpi.Send(c, []int32{int32(200 + r)}, (r+1)%n, 6); err != nil {
			return err
		}
		if st, err := wild.Wait(); err != nil || orig[0] != int32(200+(r-1+n)%n) || st.Tag != 6 {
			return fmt.Errorf("original got %d tag %d: %v", orig[0], st.Tag, err)
		}
		dd, err := d.Dup() // a duplicate of a duplicate works the same
		if err != nil {
			return err
		}
		return checkNewCalls(dd, identity(n))
	})
}

func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestSplit splits by rank mod 3, ranks whose rank mod 4 is 3 passing
// Undefined, in reverse order of rank (key -rank), and checks the new
// communicators' ranks and every new call on them.
func TestSplit(t *testing.T) {
	sizesAndLayouts(t, func(c *mpi.Comm) error {
		r := c.Rank()
		color := r % 3
		if r%4 == 3 {
			color = mpi.Undefined
		}
		s, err := c.Split(color, -r)
		if err != nil {
			return err
		}
		if color == mpi.Undefined {
			if s != nil {
				return fmt.Errorf("undefined colour got a communicator")
			}
			return c.Barrier()
		}
		var members []int // world ranks of s, by rank of s
		for q := c.Size() - 1; q >= 0; q-- {
			if q%3 == color && q%4 != 3 {
				members = append(members, q)
			}
		}
		if s.Size() != len(members) || members[s.Rank()] != r {
			return fmt.Errorf("split: rank %d of %d, want %d of %v", s.Rank(), s.Size(), slices.Index(members, r), members)
		}
		if err := checkRing(s, members); err != nil {
			return err
		}
		if err := checkNewCalls(s, members); err != nil {
			return err
		}
		return c.Barrier()
	})
}

// checkRing passes each rank's world rank to the next rank of c, checking
// the sources are ranks of c.
func checkRing(c *mpi.Comm, world []int) error {
	n, r := c.Size(), c.Rank()
	got := make([]int64, 1)
	st, err := mpi.Sendrecv(c, []int64{int64(world[r])}, (r+1)%n, 1, got, mpi.AnySource, 1)
	if err != nil {
		return err
	}
	if prev := (r - 1 + n) % n; st.Source != prev || got[0] != int64(world[prev]) {
		return fmt.Errorf("ring: got %d from %d, want %d from %d", got[0], st.Source, world[prev], prev)
	}
	return nil
}

// TestNewCalls runs every new call on the world communicator.
func TestNewCalls(t *testing.T) {
	sizesAndLayouts(t, func(c *mpi.Comm) error { return checkNewCalls(c, identity(c.Size())) })
}

// checkNewCalls checks each new call on c, whose ranks are the world ranks
// world (the values depend on them, so a wrong group shows).
func checkNewCalls(c *mpi.Comm, world []int) error {
	return errors.Join(
		checkOrderedReductions(c, world), checkScan(c, world), checkReduceScatter(c, world),
		checkGatherv(c, world), checkScatterv(c, world), checkAllgatherv(c, world),
		checkWaitany(c), checkTestall(c), checkSsend(c), checkWtime(),
	)
}

const orderedLen = 3

// checkOrderedReductions: Reduce (every root) and Allreduce with the
// non-commutative op give the maps of every rank composed in rank order,
// small and large (reduce-scatter + allgather) alike.
func checkOrderedReductions(c *mpi.Comm, world []int) error {
	for _, k := range []int{orderedLen, 9000} {
		send, want := make([]int64, k), make([]int64, k)
		for i := range send {
			send[i], want[i] = affineOf(world[c.Rank()], i), affineFold(world, i)
		}
		got := make([]int64, k)
		if err := mpi.Allreduce(c, send, got, affine); err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("allreduce of %d maps out of rank order", k)
		}
		for root := 0; root < c.Size() && k == orderedLen; root++ {
			clear(got)
			if err := mpi.Reduce(c, send, got, affine, root); err != nil {
				return err
			}
			if c.Rank() == root && !slices.Equal(got, want) {
				return fmt.Errorf("reduce to %d out of rank order: %v, want %v", root, got, want)
			}
		}
	}
	return nil
}

func checkScan(c *mpi.Comm, world []int) error {
	r := c.Rank()
	send := make([]int64, orderedLen)
	for i := range send {
		send[i] = affineOf(world[r], i)
	}
	inc, exc := make([]int64, orderedLen), []int64{-1, -1, -1}
	if err := mpi.Scan(c, send, inc, affine); err != nil {
		return err
	}
	if err := mpi.Exscan(c, send, exc, affine); err != nil {
		return err
	}
	for i := range send {
		if inc[i] != affineFold(world[:r+1], i) {
			return fmt.Errorf("scan: element %d is %x", i, inc[i])
		}
		if r == 0 && exc[i] != -1 || r > 0 && exc[i] != affineFold(world[:r], i) {
			return fmt.Errorf("exscan: element %d is %x", i, exc[i])
		}
	}
	sum := []int32{int32(world[r])} // in place
	if err := mpi.Scan(c, sum, sum, mpi.Sum[int32]); err != nil {
		return err
	}
	want := int32(0)
	for _, w := range world[:r+1] {
		want += int32(w)
	}
	if sum[0] != want {
		return fmt.Errorf("scan in place: %d, want %d", sum[0], want)
	}
	return nil
}

// checkReduceScatter: rank i gets i+1 elements (block i of the sum).
func checkReduceScatter(c *mpi.Comm, world []int) error {
	n := c.Size()
	counts, total := make([]int, n), 0
	for i := range counts {
		counts[i] = i + 1
		total += i + 1
	}
	send := make([]int64, total)
	for j := range send {
		send[j] = int64(world[c.Rank()]*1000 + j)
	}
	recv := make([]int64, counts[c.Rank()])
	if err := mpi.ReduceScatter(c, send, recv, counts, mpi.Sum[int64]); err != nil {
		return err
	}
	at := c.Rank() * (c.Rank() + 1) / 2 // blocks before this rank's: 1+2+...+rank
	for j := range recv {
		want := int64(0)
		for _, w := range world {
			want += int64(w*1000 + at + j)
		}
		if recv[j] != want {
			return fmt.Errorf("reduce scatter: element %d is %d, want %d", j, recv[j], want)
		}
	}
	return nil
}

// vblocks gives rank i a block of i%3 elements (some empty), placed in
// reverse rank order with a gap of one.
func vblocks(n int) (counts, displs []int, total int) {
	counts, displs = make([]int, n), make([]int, n)
	for i := n - 1; i >= 0; i-- {
		counts[i], displs[i] = i%3, total
		total += i%3 + 1
	}
	return counts, displs, total
}

func vvalue(world, j int) float64 { return float64(world)*10 + float64(j) + 0.5 }

func checkVRecv(what string, recv []float64, counts, displs, world []int) error {
	for i := range counts {
		for j := 0; j < counts[i]; j++ {
			if got := recv[displs[i]+j]; got != vvalue(world[i], j) {
				return fmt.Errorf("%s: block %d element %d is %v", what, i, j, got)
			}
		}
	}
	return nil
}

func vsend(world []int, r, k int) []float64 {
	out := make([]float64, k)
	for j := range out {
		out[j] = vvalue(world[r], j)
	}
	return out
}

func checkGatherv(c *mpi.Comm, world []int) error {
	counts, displs, total := vblocks(c.Size())
	for root := 0; root < c.Size(); root++ {
		recv := make([]float64, total)
		if err := mpi.Gatherv(c, vsend(world, c.Rank(), counts[c.Rank()]), recv, counts, displs, root); err != nil {
			return err
		}
		if c.Rank() == root {
			if err := checkVRecv("gatherv", recv, counts, displs, world); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkScatterv(c *mpi.Comm, world []int) error {
	counts, displs, total := vblocks(c.Size())
	for root := 0; root < c.Size(); root++ {
		send := make([]float64, total)
		for i := range counts {
			copy(send[displs[i]:], vsend(world, i, counts[i]))
		}
		recv := make([]float64, counts[c.Rank()])
		if err := mpi.Scatterv(c, send, counts, displs, recv, root); err != nil {
			return err
		}
		if !slices.Equal(recv, vsend(world, c.Rank(), counts[c.Rank()])) {
			return fmt.Errorf("scatterv from %d: %v", root, recv)
		}
	}
	return nil
}

func checkAllgatherv(c *mpi.Comm, world []int) error {
	counts, displs, total := vblocks(c.Size())
	recv := make([]float64, total)
	if err := mpi.Allgatherv(c, vsend(world, c.Rank(), counts[c.Rank()]), recv, counts, displs); err != nil {
		return err
	}
	return checkVRecv("allgatherv", recv, counts, displs, world)
}

// checkWaitany: a receive from every rank, then Waitany until none is left;
// each request completes once, with its own message.
func checkWaitany(c *mpi.Comm) error {
	n, r := c.Size(), c.Rank()
	bufs := make([][]int32, n)
	reqs := make([]*mpi.Request, n)
	for q := range reqs {
		bufs[q] = make([]int32, 1)
		reqs[q] = mpi.Irecv(c, bufs[q], q, 30)
	}
	sends := make([]*mpi.Request, n)
	for q := range sends {
		sends[q] = mpi.Isend(c, []int32{int32(r*100 + q)}, q, 30)
	}
	seen := make([]bool, n)
	for k := 0; ; k++ {
		i, st, err := mpi.Waitany(reqs)
		if err != nil {
			return err
		}
		if i < 0 {
			break
		}
		if seen[i] || reqs[i] != nil || st.Source != i || bufs[i][0] != int32(i*100+r) {
			return fmt.Errorf("waitany: request %d (seen %v) from %d holds %d", i, seen[i], st.Source, bufs[i][0])
		}
		seen[i] = true
	}
	if slices.Contains(seen, false) {
		return fmt.Errorf("waitany: requests never completed: %v", seen)
	}
	idx, _, err := mpi.Waitsome(sends)
	for len(idx) > 0 && err == nil {
		idx, _, err = mpi.Waitsome(sends)
	}
	if err != nil || slices.ContainsFunc(sends, func(r *mpi.Request) bool { return r != nil }) {
		return fmt.Errorf("waitsome left %v: %v", sends, err)
	}
	return nil
}

// checkTestall: a receive whose message is not sent yet is not complete;
// once it is sent and received, Testall finds all done and clears them.
func checkTestall(c *mpi.Comm) error {
	buf := make([]int32, 1)
	reqs := []*mpi.Request{mpi.Irecv(c, buf, c.Rank(), 31), nil}
	if done, _, err := mpi.Testall(reqs); done || err != nil {
		return fmt.Errorf("testall: done %v before the message was sent: %v", done, err)
	}
	if i, ok, _, err := mpi.Testany(reqs); ok || i != -1 || err != nil {
		return fmt.Errorf("testany: %d %v before the message was sent: %v", i, ok, err)
	}
	if err := mpi.Send(c, []int32{7}, c.Rank(), 31); err != nil {
		return err
	}
	if _, err := reqs[0].Wait(); err != nil {
		return err
	}
	done, sts, err := mpi.Testall(reqs)
	if !done || err != nil || sts[0].Source != c.Rank() || reqs[0] != nil || buf[0] != 7 {
		return fmt.Errorf("testall after completion: %v %v %v", done, sts, err)
	}
	if i, ok, _, _ := mpi.Testany(reqs); !ok || i != -1 {
		return fmt.Errorf("testany on no request: %d %v", i, ok)
	}
	return nil
}

// checkSsend: rank r's synchronous send to rank r+1 stays incomplete while
// r+1 has only probed it, and completes once r+1 receives it.
func checkSsend(c *mpi.Comm) error {
	n, r := c.Size(), c.Rank()
	next, prev := (r+1)%n, (r-1+n)%n
	if n == 1 {
		req := mpi.Issend(c, []int64{9}, 0, 40)
		got := make([]int64, 1)
		if _, err := mpi.Recv(c, got, 0, 40); err != nil || got[0] != 9 {
			return fmt.Errorf("ssend to self: %v %v", got, err)
		}
		_, err := req.Wait()
		return err
	}
	req := mpi.Issend(c, []int64{int64(r)}, next, 40)
	if _, err := c.Probe(prev, 40); err != nil { // probing does not match
		return err
	}
	if err := mpi.Send(c, []byte{1}, prev, 41); err != nil { // tell prev: not received yet
		return err
	}
	if _, err := mpi.Recv(c, []byte{0}, next, 41); err != nil {
		return err
	}
	if done, _, err := req.Test(); done {
		return fmt.Errorf("ssend to %d complete before a receive matched it (%v)", next, err)
	}
	if err := c.Barrier(); err != nil { // every rank has tested
		return err
	}
	got := make([]int64, 1)
	if _, err := mpi.Recv(c, got, prev, 40); err != nil || got[0] != int64(prev) {
		return fmt.Errorf("ssend: got %v: %v", got, err)
	}
	if _, err := req.Wait(); err != nil {
		return err
	}
	in := make([]byte, 1) // the blocking form, towards a posted receive
	rr := mpi.Irecv(c, in, prev, 42)
	if err := mpi.Ssend(c, []byte{byte(r)}, next, 42); err != nil {
		return err
	}
	if _, err := rr.Wait(); err != nil || in[0] != byte(prev) {
		return fmt.Errorf("ssend: got %v: %v", in, err)
	}
	return nil
}

func checkWtime() error {
	a := mpi.Wtime()
	b := mpi.Wtime()
	if a < 0 || b < a {
		return fmt.Errorf("wtime went back: %v then %v", a, b)
	}
	return nil
}

// TestBadArguments: wrong arguments to the new calls are errors that say
// so, and a rank passing a bad colour to Split does not leave the others
// waiting.
func TestBadArguments(t *testing.T) {
	run(t, 3, nil, func(c *mpi.Comm) error {
		color := 0
		if c.Rank() == 1 {
			color = -5
		}
		s, err := c.Split(color, 0)
		switch {
		case c.Rank() == 1 && (!errors.Is(err, mpi.ErrArg) || s != nil):
			return fmt.Errorf("split with colour -5: %v, %v", s, err)
		case c.Rank() != 1 && (err != nil || s.Size() != 2):
			return fmt.Errorf("split beside a bad colour: %v", err)
		}
		wrong := []error{
			mpi.ReduceScatter(c, []int64{1, 2}, []int64{0}, []int{1, 1}, mpi.Sum[int64]),
			mpi.ReduceScatter(c, []int64{1, 2, 3}, []int64{0}, []int{1, 1, 1}, nil),
			mpi.ReduceScatter(c, []int64{1, 2, 3}, []int64{0}, []int{1, -1, 3}, mpi.Sum[int64]),
			mpi.Allgatherv(c, []int32{1}, make([]int32, 3), []int{1, 1}, []int{0, 1}),
			mpi.Allgatherv(c, []int32{1}, make([]int32, 3), []int{1, 1, 1}, []int{0, 1, 3}),
			mpi.Scan(c, []int32{1}, nil, mpi.Sum[int32]),
			mpi.Exscan(c, []int32{1}, []int32{1}, nil),
			mpi.Gatherv(c, []int32{1}, nil, nil, nil, 3),
			mpi.Ssend(c, []int32{1}, 3, 0),
			mpi.Ssend(c, []int32{1}, 0, -2),
		}
		for i, err := range wrong {
			if !errors.Is(err, mpi.ErrArg) {
				return fmt.Errorf("bad call %d: %v", i, err)
			}
		}
		if i, _, err := mpi.Waitany(nil); i != -1 || err != nil {
			return fmt.Errorf("waitany on nothing: %d %v", i, err)
		}
		if idx, _, err := mpi.Waitsome([]*mpi.Request{nil}); idx != nil || err != nil {
			return fmt.Errorf("waitsome on nothing: %v %v", idx, err)
		}
		return c.Barrier()
	})
}
