package mpi

import (
	"sync"
	"sync/atomic"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// Wildcards for Recv, Irecv and Probe.
const (
	AnySource = -1 // match a message from any rank
	AnyTag    = -1 // match a message with any tag
)

// Status describes a received (or probed) message.
type Status struct {
	Source int // rank that sent it
	Tag    int // its tag
	Count  int // elements received (bytes for Probe and byte receives)
	Bytes  int // its length in bytes
}

// Request is a non-blocking operation started by Isend or Irecv. The buffer
// it was given must not be touched until Wait or Test reports it complete.
type Request struct {
	s      *Session
	done   chan struct{} // closed on completion; a blocking receive's own request: see own
	state  atomic.Uint32 // reqPending, reqDone, or (own only) reqAsleep
	own    bool          // a blocking receive's request, reused (recvOwn)
	status Status
	err    error
	fix    func() // runs once when the caller first sees completion
	once   sync.Once
	poll   bool // a receive: Wait first polls the rings it may come from (shmPoll)
	src    int  // the receive's world source rank, or AnySource
}

// A request's state. A blocking receive's own request (recvOwn) is never
// seen by the program and is reused, so its done channel is not closed:
// its single waiter marks itself asleep (reqAsleep) before it waits on
// done, and completion sends one token then, and costs nothing otherwise.
const (
	reqPending uint32 = iota
	reqDone
	reqAsleep
)

func newRequest(s *Session) *Request {
	return &Request{s: s, done: make(chan struct{})}
}

// failed returns a request already completed with err.
func failed(s *Session, err error) *Request {
	r := newRequest(s)
	r.complete(Status{}, err)
	return r
}

// complete records the outcome; it is called exactly once.
func (r *Request) complete(st Status, err error) {
	r.status, r.err = st, err
	if r.own {
		if r.state.Swap(reqDone) == reqAsleep {
			r.done <- struct{}{} // buffered: never blocks
		}
		return
	}
	r.state.Store(reqDone)
	close(r.done)
}

// completed reports whether the request has completed: the check of a
// poll, cheaper than a select on done.
func (r *Request) completed() bool { return r.state.Load() == reqDone }

// Wait blocks until the operation completes, or the job fails or the agent
// is lost, and returns its status.
func (r *Request) Wait() (Status, error) {
	if r == nil {
		return Status{}, argErr("nil request")
	}
	if r.poll && r.s.shm.list != nil {
		r.s.shmPoll(r, r.src)
	}
	if isClosed(r.done) { // done already (the poll read it): no select
		return r.result()
	}
	select {
	case <-r.done:
	case <-r.s.dead:
		select {
		case <-r.done:
		default:
			return Status{}, r.s.deadErr()
		}
	}
	return r.result()
}

// Test reports whether the operation has completed, without blocking; when
// it has, it also returns its status and error. In a replicated job the
// lead copy's answer is every copy's (a backup waits for the operation when
// its lead found it complete); each Test there is a choice sent to the
// backups, so a loop that spins on Test costs traffic: prefer Wait.
func (r *Request) Test() (bool, Status, error) {
	if r == nil {
		return true, Status{}, argErr("nil request")
	}
	if r.s.rep == nil {
		return r.test()
	}
	num, d, mine, err := r.s.choice(proto.DecideTest)
	switch {
	case err != nil:
		return true, Status{}, err
	case !mine && !d.Found:
		return false, Status{}, nil
	case !mine:
		st, err := r.Wait()
		return true, st, err
	}
	done, st, err := r.test()
	r.s.tell(num, proto.DecideTest, done, 0, 0)
	return done, st, err
}

func (r *Request) test() (bool, Status, error) {
	select {
	case <-r.done:
		st, err := r.result()
		return true, st, err
	case <-r.s.dead:
		return true, Status{}, r.s.deadErr()
	default:
		return false, Status{}, nil
	}
}

func (r *Request) result() (Status, error) {
	if r.fix != nil && r.err == nil {
		r.once.Do(r.fix)
	}
	return r.status, r.err
}

// Waitall waits for every request and returns the first error, or nil when
// all succeeded.
func Waitall(reqs ...*Request) error {
	var first error
	for _, r := range reqs {
		if _, err := r.Wait(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
