package linkdelay

import (
	"bytes"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Limit is the most bytes a connection's line holds: the largest send
// buffer Linux gives a TCP socket by default (tcp_wmem's 4 MiB), so a
// delayed connection carries what a real link of that delay would.
const Limit = 4 << 20

// closeGrace is how long Close waits, beyond the delay, for the line to
// drain into a connection that does not take it (a peer that stopped
// reading); then it closes the connection under the blocked write.
const closeGrace = 2 * time.Second

// Line delays writes to dst by a fixed time, in order, without cutting
// bandwidth: Write copies the chunk into the line and returns; one
// goroutine writes each chunk to dst when its time comes. The line holds
// at most limit bytes (one larger chunk when it is empty); a writer that
// finds it full blocks until there is room or its write deadline passes.
// A write error of dst is returned by the writes after it. Close lets
// what was written leave, then closes dst, and ends the goroutine.
// Methods are safe for concurrent use; concurrent writes go in the order
// they enter the line.
type Line struct {
	dst   io.WriteCloser
	delay time.Duration
	limit int

	mu       sync.Mutex
	q        []chunk // oldest first; q[0] is being written
	queued   int     // bytes in q
	deadline time.Time
	closing  bool
	err      error         // dst's first write error
	changed  chan struct{} // closed and replaced when blocked writers must look again

	wake      chan struct{} // one token: a chunk or Close was queued
	abort     chan struct{} // closed when Close stops waiting for the line to drain
	done      chan struct{} // closed when the goroutine has ended
	closeOnce sync.Once
	closeErr  error
}

type chunk struct {
	due time.Time // when it may leave
	b   []byte
}

// NewLine starts a line of delay in front of dst, holding at most limit
// bytes. The caller must Close it.
func NewLine(dst io.WriteCloser, delay time.Duration, limit int) *Line {
	l := &Line{
		dst: dst, delay: delay, limit: max(limit, 1),
		changed: make(chan struct{}),
		wake:    make(chan struct{}, 1), abort: make(chan struct{}), done: make(chan struct{}),
	}
	go l.run()
	return l
}

// Delay is how long each chunk waits in the line.
func (l *Line) Delay() time.Duration { return l.delay }

// Write puts a copy of b in the line, due to leave after the delay; it
// blocks while the line is full.
func (l *Line) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c := chunk{b: bytes.Clone(b)}
	for {
		l.mu.Lock()
		if err := l.failedLocked(); err != nil {
			l.mu.Unlock()
			return 0, err
		}
		if l.queued == 0 || l.queued+len(b) <= l.limit {
			c.due = time.Now().Add(l.delay)
			l.q = append(l.q, c)
			l.queued += len(b)
			l.mu.Unlock()
			l.signal()
			return len(b), nil
		}
		deadline, changed := l.deadline, l.changed
		l.mu.Unlock()
		waitChange(changed, deadline)
	}
}

// failedLocked is why a write cannot enter the line now, if it cannot.
func (l *Line) failedLocked() error {
	switch {
	case l.closing:
		return net.ErrClosed
	case l.err != nil:
		return l.err
	case !l.deadline.IsZero() && !time.Now().Before(l.deadline):
		return os.ErrDeadlineExceeded
	}
	return nil
}

// waitChange waits until changed is closed or the deadline passes.
func waitChange(changed <-chan struct{}, deadline time.Time) {
	if deadline.IsZero() {
		<-changed
		return
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	}
}

// SetWriteDeadline bounds how long writes wait for room in the line,
// those already waiting included. The zero time removes the bound.
func (l *Line) SetWriteDeadline(t time.Time) {
	l.mu.Lock()
	l.deadline = t
	l.broadcastLocked()
	l.mu.Unlock()
}

func (l *Line) broadcastLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *Line) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Close stops intake, waits until the line has drained into dst (at most
// the delay and a grace; then dst is closed under the blocked write),
// closes dst and returns its Close error. Later calls return the same.
func (l *Line) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closing = true
		l.broadcastLocked()
		l.mu.Unlock()
		l.signal()
		t := time.NewTimer(l.delay + closeGrace)
		select {
		case <-l.done:
		case <-t.C:
			close(l.abort)
		}
		t.Stop()
		l.closeErr = l.dst.Close()
		<-l.done
	})
	return l.closeErr
}

// run writes each chunk to dst when it is due, until the line is closed
// and empty, dst fails, or Close aborts.
func (l *Line) run() {
	defer close(l.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		c, ok := l.next()
		if !ok {
			return
		}
		if wait := time.Until(c.due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-l.abort:
				return
			}
		}
		_, err := l.dst.Write(c.b)
		if !l.sent(err) {
			return
		}
	}
}

// next waits for the oldest chunk; false once the line is closed and
// empty, or aborted.
func (l *Line) next() (chunk, bool) {
	for {
		l.mu.Lock()
		if len(l.q) > 0 {
			c := l.q[0]
			l.mu.Unlock()
			return c, true
		}
		closing := l.closing
		l.mu.Unlock()
		if closing {
			return chunk{}, false
		}
		select {
		case <-l.wake:
		case <-l.abort:
			return chunk{}, false
		}
	}
}

// sent takes the written chunk out of the line and makes room; on a write
// error it keeps the error for later writes, drops the rest of the line
// and returns false.
func (l *Line) sent(err error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queued -= len(l.q[0].b)
	l.q[0] = chunk{}
	l.q = l.q[1:]
	if err != nil {
		l.err = err
		l.q, l.queued = nil, 0
	}
	l.broadcastLocked()
	return err == nil
}
