// Package rpc runs Zorilla's request/response protocols between agents over
// libp2p streams, with one twist: an agent is also a worker for the jobs it
// submits, and a libp2p host cannot dial itself, so a stream to the local
// peer is an in-process pipe served by the same handler. Callers and
// handlers therefore never special-case "myself".
package rpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/zorilla-p2p/zorilla/internal/ratelimit"
	"github.com/zorilla-p2p/zorilla/internal/wire"
)

// ErrClosed is returned by an Endpoint after Close.
var ErrClosed = errors.New("rpc: endpoint closed")

// DefaultTimeout bounds a call whose context has no deadline, so a peer that
// never answers cannot hold a caller forever.
const DefaultTimeout = 10 * time.Second

// Stream is what callers and handlers see: a libp2p stream, or one end of an
// in-process pipe when an agent talks to itself.
type Stream interface {
	io.ReadWriteCloser
	Reset() error
	SetDeadline(time.Time) error
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// Handler serves one inbound stream. It must end the stream (Close on
// success, Reset on error) and return when ctx ends.
type Handler func(ctx context.Context, from peer.ID, s Stream)

// Endpoint registers handlers on a host and opens streams to peers.
type Endpoint struct {
	h      host.Host
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.RWMutex // guards handlers, limits and closed
	handlers map[protocol.ID]Handler
	limits   map[protocol.ID]*peerLimit
	closed   bool

	refused ratelimit.Counts // streams refused by a limit, by protocol name
}

// New returns an Endpoint on h. Its lifetime ends with Close.
func New(h host.Host) *Endpoint {
	ctx, cancel := context.WithCancel(context.Background())
	return &Endpoint{h: h, ctx: ctx, cancel: cancel, handlers: map[protocol.ID]Handler{},
		limits: map[protocol.ID]*peerLimit{}}
}

// Self is the local peer's ID.
func (e *Endpoint) Self() peer.ID { return e.h.ID() }

// Handle serves protocol p with fn, for remote peers and for the local peer.
func (e *Endpoint) Handle(p protocol.ID, fn Handler) {
	e.mu.Lock()
	e.handlers[p] = fn
	e.mu.Unlock()
	e.h.SetStreamHandler(p, func(s network.Stream) {
		from := s.Conn().RemotePeer()
		if !e.admit(p, from) || !e.track() {
			_ = s.Reset()
			return
		}
		defer e.wg.Done()
		serve(e.ctx, fn, from, s)
	})
}

// track counts a handler goroutine unless the endpoint is closed.
func (e *Endpoint) track() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return false
	}
	e.wg.Add(1)
	return true
}

// Open opens a stream for protocol p to peer to. A stream to the local peer
// is a pipe served in-process.
func (e *Endpoint) Open(ctx context.Context, to peer.ID, p protocol.ID) (Stream, error) {
	if to != e.h.ID() {
		s, err := e.h.NewStream(ctx, to, p)
		if err != nil {
			return nil, fmt.Errorf("open %s to %s: %w", p, to.ShortString(), err)
		}
		return s, nil
	}
	e.mu.RLock()
	fn, ok := e.handlers[p]
	e.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("open %s to self: protocol not served", p)
	}
	if !e.track() {
		return nil, ErrClosed
	}
	local, remote := net.Pipe()
	go func() {
		defer e.wg.Done()
		serve(e.ctx, fn, to, pipeStream{remote})
	}()
	return pipeStream{local}, nil
}

// Call sends req on a new stream for protocol p and decodes one reply of at
// most limit bytes into resp. The stream is closed afterwards.
func (e *Endpoint) Call(ctx context.Context, to peer.ID, p protocol.ID, req, resp any, limit int) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	s, err := e.Open(ctx, to, p)
	if err != nil {
		return err
	}
	dl, _ := ctx.Deadline()
	_ = s.SetDeadline(dl)
	// Not every transport honours deadlines (mocknet ignores them): the
	// context's end resets the stream, so a silent peer never holds a call.
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	if err := wire.WriteJSON(s, req); err != nil {
		_ = s.Reset()
		return fmt.Errorf("%s to %s: %w", p, to.ShortString(), err)
	}
	if err := wire.ReadJSON(bufio.NewReader(s), limit, resp); err != nil {
		_ = s.Reset()
		return fmt.Errorf("%s to %s: %w", p, to.ShortString(), err)
	}
	// The answer is in hand: the call succeeded whatever closing says. Over
	// QUIC, Close after the peer's close reports a cancelled stream.
	_ = s.Close()
	return nil
}

// Close stops serving, cancels running handlers and waits for them.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	for p := range e.handlers {
		e.h.RemoveStreamHandler(p)
	}
	e.mu.Unlock()
	e.cancel()
	e.wg.Wait()
	return nil
}

// serve runs fn on s, resetting s if the endpoint closes first so that a
// handler blocked in a read always returns.
func serve(ctx context.Context, fn Handler, from peer.ID, s Stream) {
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	fn(ctx, from, s)
}

// pipeStream gives a net.Conn the Reset of a stream.
type pipeStream struct{ net.Conn }

func (p pipeStream) Reset() error { return p.Conn.Close() }
