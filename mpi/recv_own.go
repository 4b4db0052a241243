package mpi

import "sync"

// A blocking receive (Recv, and the collectives' receives) runs on the
// calling goroutine from start to end without an allocation: its request
// and posted receive come from a pool and go back to it, and the message
// that matches it is kept in it (recvReq.msg). Its request is never seen
// by the program, so completing it need not close a channel: the waiter
// polls the rings (shmPoll) and reads the outcome, and only a waiter that
// goes to sleep asks, through the request's state, for the token on done.

// ownOps holds the reusable operations of blocking receives.
var ownOps = sync.Pool{New: func() any {
	return &recvOp{req: Request{done: make(chan struct{}, 1), own: true}}
}}

// recvOwn receives into buf (elements of elem bytes) in context ctx and
// waits for the message: Irecv then Wait, without their allocations.
func (c *Comm) recvOwn(ctx uint32, buf []byte, elem, src, tag int) (Status, error) {
	op := ownOps.Get().(*recvOp)
	op.req.s = c.s
	if err := c.postRecv(op, ctx, buf, elem, src, tag); err != nil {
		op.reset()
		ownOps.Put(op)
		return Status{}, err
	}
	st, err, reuse := op.req.waitOwn()
	if reuse {
		op.reset()
		ownOps.Put(op)
	}
	return st, err
}

// waitOwn waits for a blocking receive's own request. reuse is false when
// the session ended first: the request may still be in the matching engine
// or be completed late, so it must not be used again.
func (r *Request) waitOwn() (st Status, err error, reuse bool) {
	if r.s.shm.list != nil {
		r.s.shmPoll(r, r.src)
	}
	if !r.completed() && r.state.CompareAndSwap(reqPending, reqAsleep) { // (the poll mostly completed it)
		select {
		case <-r.done:
		case <-r.s.dead:
			if !r.completed() {
				return Status{}, r.s.deadErr(), false
			}
			return r.status, r.err, false // its token may still come: not reused
		}
	}
	return r.status, r.err, true
}

// reset makes a used operation ready for the pool: only the token channel
// stays (it is empty, its one token taken, or none sent).
func (op *recvOp) reset() {
	*op = recvOp{req: Request{done: op.req.done, own: true}}
}
