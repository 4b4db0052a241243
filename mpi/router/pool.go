package router

import (
	"io"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// framePool recycles frame buffers by size class (powers of two from
// minPooled up to the largest MSG frame), so forwarding a stream of
// fragments neither zeroes nor garbage-collects a fresh buffer per
// fragment. Small frames too: a fresh 8 KiB buffer per message costs a
// ping-pong a third of its latency in allocation and collection.
type framePool struct {
	size    int         // the largest frame: capacity of the top class
	classes []sync.Pool // classes[i] holds buffers of capacity classCap(i)
}

// minPooled is the smallest frame worth pooling: smaller ones are cheap to
// allocate.
const minPooled = 512

func newFramePool(size int) *framePool {
	n := 1
	for classCap(n-1, size) < size {
		n++
	}
	return &framePool{size: size, classes: make([]sync.Pool, n)}
}

// classCap is the capacity of class i's buffers.
func classCap(i, size int) int { return min(minPooled<<i, size) }

// class is the class of a frame of l bytes, or -1 when it is not pooled.
func (fp *framePool) class(l int) int {
	if l < minPooled || l > fp.size {
		return -1
	}
	return bits.Len(uint(l-1)) - bits.Len(minPooled-1)
}

// get returns a buffer of length l, recycled when one of its class is free.
func (fp *framePool) get(l int) []byte {
	c := fp.class(l)
	if c < 0 {
		return make([]byte, l)
	}
	if p, ok := fp.classes[c].Get().(*[]byte); ok {
		return (*p)[:l]
	}
	return make([]byte, l, classCap(c, fp.size))
}

// put recycles b if it came from get's classes.
func (fp *framePool) put(b []byte) {
	c := fp.class(cap(b))
	if c < 0 || cap(b) != classCap(c, fp.size) {
		return
	}
	b = b[:0]
	fp.classes[c].Put(&b)
}

// frame is a frame read off a socket or stream, shared by the places it is
// delivered to; the last unref gives its buffer back to the pool.
type frame struct {
	f    proto.Frame
	refs atomic.Int32
	pool *framePool
}

// ref adds a holder.
func (fr *frame) ref() { fr.refs.Add(1) }

// unref drops a holder; the last one recycles the buffer.
func (fr *frame) unref() {
	if fr.refs.Add(-1) == 0 && fr.pool != nil {
		fr.pool.put(fr.f)
		fr.f = nil
	}
}

// read reads one frame with a body of at most max bytes, into a pooled
// buffer. The caller holds the only reference.
func (fp *framePool) read(r io.Reader, max int) (*frame, error) {
	var hdr [proto.HeaderLen]byte
	typ, n, err := proto.ReadHeader(r, &hdr, max)
	if err != nil {
		return nil, err
	}
	b := fp.get(proto.HeaderLen + n)
	copy(b, hdr[:])
	b[4] = typ
	if _, err := io.ReadFull(r, b[proto.HeaderLen:]); err != nil {
		return nil, unexpectedEOF(err)
	}
	fr := &frame{f: b, pool: fp}
	fr.refs.Store(1)
	return fr, nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
