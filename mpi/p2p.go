package mpi

// Send sends buf to rank dst with a tag (0 or more). It returns once buf has
// been handed to the agent and may be reused; it does not wait for a
// matching receive.
func Send[T Elem](c *Comm, buf []T, dst, tag int) error {
	return c.send(c.p2p, wireOf(buf), dst, tag)
}

// Isend starts sending buf to dst. buf must not change until the request
// completes.
func Isend[T Elem](c *Comm, buf []T, dst, tag int) *Request {
	return c.isend(c.p2p, wireOf(buf), dst, tag, false)
}

// Recv receives a message from src (or AnySource) with tag (or AnyTag) into
// buf. The message must fit: a longer one completes with ErrTruncate.
// Status.Count is the number of elements received.
func Recv[T Elem](c *Comm, buf []T, src, tag int) (Status, error) {
	if !nativeLE && sizeOf[T]() > 1 { // the elements need fixing once received
		return Irecv(c, buf, src, tag).Wait()
	}
	return c.recvOwn(c.p2p, view(buf), sizeOf[T](), src, tag)
}

// Irecv starts a receive into buf; buf must not be touched until the
// request completes.
func Irecv[T Elem](c *Comm, buf []T, src, tag int) *Request {
	b := view(buf)
	r := c.irecv(c.p2p, b, sizeOf[T](), src, tag)
	if !nativeLE && sizeOf[T]() > 1 {
		r.fix = func() { fromWire(b[:r.status.Bytes], sizeOf[T]()) }
	}
	return r
}

// Sendrecv sends send to dst and receives into recv from src at the same
// time, so that pairs of ranks can exchange without ordering their calls.
func Sendrecv[T Elem](c *Comm, send []T, dst, sendTag int, recv []T, src, recvTag int) (Status, error) {
	sr := Isend(c, send, dst, sendTag)
	st, err := Recv(c, recv, src, recvTag)
	if _, serr := sr.Wait(); err == nil {
		err = serr
	}
	return st, err
}
