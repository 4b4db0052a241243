package router

import (
	"io"
	"sync"
	"sync/atomic"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// framePool recycles buffers of whole MSG fragments, so forwarding a stream
// of fragments neither zeroes nor garbage-collects a fresh buffer per
// fragment.
type framePool struct {
	size int // capacity of pooled buffers: the largest MSG frame
	p    sync.Pool
}

func newFramePool(size int) *framePool {
	return &framePool{size: size}
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
	if fr.refs.Add(-1) == 0 && fr.pool != nil && cap(fr.f) == fr.pool.size {
		b := fr.f[:0]
		fr.f = nil
		fr.pool.p.Put(&b)
	}
}

// read reads one frame with a body of at most max bytes, into a pooled
// buffer when it is a large one. The caller holds the only reference.
func (fp *framePool) read(r io.Reader, max int) (*frame, error) {
	var hdr [proto.HeaderLen]byte
	typ, n, err := proto.ReadHeader(r, &hdr, max)
	if err != nil {
		return nil, err
	}
	var b []byte
	if l := proto.HeaderLen + n; l <= fp.size && l >= fp.size/4 {
		// only large frames: pooling a big buffer for a small frame would
		// allocate big buffers whenever a collection empties the pool
		if p, ok := fp.p.Get().(*[]byte); ok {
			b = (*p)[:proto.HeaderLen+n]
		} else {
			b = make([]byte, proto.HeaderLen+n, fp.size)
		}
	} else {
		b = make([]byte, proto.HeaderLen+n)
	}
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
