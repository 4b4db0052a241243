package mpi

import (
	"reflect"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// Completion of one of several requests. As in MPI, a completed request is
// set to nil in the caller's slice (MPI_REQUEST_NULL) and nil entries are
// skipped, so a loop calling Waitany until it returns -1 handles each
// request once. In a replicated job which request completed first is the
// lead copy's choice, taken by every copy.

// Waitany waits until one of reqs completes, sets it to nil and returns its
// index and status. It returns index -1 when every entry is nil.
func Waitany(reqs []*Request) (int, Status, error) {
	s := sessionOf(reqs)
	if s == nil {
		return -1, Status{}, nil
	}
	if s.rep == nil {
		return takeAt(reqs, anyDone(s, reqs))
	}
	num, d, mine, err := s.choice(proto.DecideTest)
	switch {
	case err != nil:
		return -1, Status{}, err
	case !mine:
		return takeAt(reqs, int(d.Tag))
	}
	i := anyDone(s, reqs)
	s.tell(num, proto.DecideTest, true, 0, i)
	return takeAt(reqs, i)
}

// Waitsome waits until at least one of reqs completes, sets the completed
// ones to nil and returns their indexes and statuses (the first error among
// them). It returns no index when every entry is nil.
func Waitsome(reqs []*Request) ([]int, []Status, error) {
	i, st, err := Waitany(reqs)
	if i < 0 {
		return nil, nil, err
	}
	idx, sts := []int{i}, []Status{st}
	if s := sessionOf(reqs); s == nil || s.rep != nil {
		return idx, sts, err // a replicated job takes one: what else is done is a choice
	}
	for j, r := range reqs {
		if r != nil && isDone(r) {
			st, e := take(reqs, j)
			idx, sts = append(idx, j), append(sts, st)
			if err == nil {
				err = e
			}
		}
	}
	return idx, sts, err
}

// Testany reports whether one of reqs has completed, without blocking;
// if so it sets that one to nil and returns its index and status. With
// every entry nil it returns (-1, true).
func Testany(reqs []*Request) (int, bool, Status, error) {
	s := sessionOf(reqs)
	if s == nil {
		return -1, true, Status{}, nil
	}
	if s.rep == nil {
		return testany(reqs)
	}
	num, d, mine, err := s.choice(proto.DecideTest)
	switch {
	case err != nil:
		return -1, true, Status{}, err
	case !mine && !d.Found:
		return -1, false, Status{}, nil
	case !mine:
		st, err := take(reqs, int(d.Tag))
		return int(d.Tag), true, st, err
	}
	i, ok, st, err := testany(reqs)
	s.tell(num, proto.DecideTest, ok, 0, max(i, 0))
	return i, ok, st, err
}

func testany(reqs []*Request) (int, bool, Status, error) {
	for i, r := range reqs {
		if r != nil && (isDone(r) || isDead(r.s)) {
			st, err := take(reqs, i)
			return i, true, st, err
		}
	}
	return -1, false, Status{}, nil
}

// Testall reports whether every one of reqs has completed, without
// blocking. If so it sets them all to nil and returns their statuses and
// the first error; otherwise it leaves them as they are.
func Testall(reqs []*Request) (bool, []Status, error) {
	s := sessionOf(reqs)
	if s == nil {
		return true, make([]Status, len(reqs)), nil
	}
	done := allDone(reqs)
	if s.rep != nil {
		num, d, mine, err := s.choice(proto.DecideTest)
		switch {
		case err != nil:
			return true, nil, err
		case mine:
			s.tell(num, proto.DecideTest, done, 0, 0)
		default:
			done = d.Found
		}
	}
	if !done {
		return false, nil, nil
	}
	sts := make([]Status, len(reqs))
	var first error
	for i, r := range reqs {
		if r == nil {
			continue
		}
		st, err := take(reqs, i)
		sts[i] = st
		if first == nil {
			first = err
		}
	}
	return true, sts, first
}

func allDone(reqs []*Request) bool {
	for _, r := range reqs {
		if r != nil && !isDone(r) && !isDead(r.s) {
			return false
		}
	}
	return true
}

func takeAt(reqs []*Request, i int) (int, Status, error) {
	st, err := take(reqs, i)
	return i, st, err
}

// take waits for reqs[i] (complete already, or the lead's choice), sets it
// to nil and returns its outcome.
func take(reqs []*Request, i int) (Status, error) {
	if i < 0 || i >= len(reqs) || reqs[i] == nil {
		return Status{}, argErr("no active request %d of %d", i, len(reqs))
	}
	r := reqs[i]
	reqs[i] = nil
	return r.Wait()
}

// sessionOf is the session of the first non-nil request, or nil.
func sessionOf(reqs []*Request) *Session {
	for _, r := range reqs {
		if r != nil {
			return r.s
		}
	}
	return nil
}

func isDead(s *Session) bool {
	select {
	case <-s.dead:
		return true
	default:
		return false
	}
}

// anyDone blocks until one of reqs completes or the session dies, and
// returns the index of a completed (or, after the session died, any
// active) request.
func anyDone(s *Session, reqs []*Request) int {
	cases := make([]reflect.SelectCase, 0, len(reqs)+1)
	index := make([]int, 0, len(reqs))
	for i, r := range reqs {
		if r == nil {
			continue
		}
		if isDone(r) {
			return i
		}
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(r.done)})
		index = append(index, i)
	}
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.dead)})
	chosen, _, _ := reflect.Select(cases)
	if chosen == len(index) { // the session died: any request reports it
		return index[0]
	}
	return index[chosen]
}
