package mpi_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
)

// failBound is how long a blocked call may take to notice a failure. The
// failures below are reported at once, not by timeouts, so they take
// milliseconds; the bound only keeps a regression from hanging the test.
const failBound = 3 * time.Second

// runSessions runs fn on every rank with its Session (not just its Comm),
// without finalizing, and returns each rank's error.
//
// A rank may still be in Init when another makes the job fail (the release
// reaches the agents one by one): its Init then returns the job's failure,
// which failed, if set, checks as fn would have.
func runSessions(t *testing.T, size int, fn func(s *mpi.Session) error, failed func(*mpi.JobError) error) ([]error, *mpitest.Job) {
	t.Helper()
	j, err := cluster.AddJob(size, mpitest.RoundRobin(len(cluster.Hosts)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(j.Remove)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs := make([]error, size)
	done := make(chan int)
	for r := 0; r < size; r++ {
		go func() {
			s, err := mpi.InitWith(ctx, j.Opts[r])
			var je *mpi.JobError
			switch {
			case err == nil:
				err = fn(s)
			case failed != nil && errors.As(err, &je):
				err = failed(je)
			}
			errs[r] = err
			done <- r
		}()
	}
	if err := j.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range size {
		<-done
	}
	return errs, j
}

// failedAt is when the test made the job fail, in Unix nanoseconds.
var failedAt atomic.Int64

// markFailure records the moment a test makes a job fail.
func markFailure() { failedAt.Store(time.Now().UnixNano()) }

// blockedCall waits in a barrier, then a receive, that can only end in an
// error (a rank leaves a barrier as soon as it has heard from enough
// others, so the failure may reach it in either). It checks the error is a
// JobError that came within failBound of the failure.
func blockedCall(c *mpi.Comm) (*mpi.JobError, error) {
	err := c.Barrier()
	if err == nil {
		_, err = mpi.Recv(c, make([]byte, 1), mpi.AnySource, 99)
	}
	if took := time.Since(time.Unix(0, failedAt.Load())); took > failBound {
		return nil, fmt.Errorf("blocked call took %v to fail", took)
	}
	var je *mpi.JobError
	if !errors.As(err, &je) || !errors.Is(err, mpi.ErrJobFailed) {
		return nil, fmt.Errorf("blocked call ended with %v, want a JobError", err)
	}
	return je, nil
}

// abortedBy3 checks TestAbort's failure.
func abortedBy3(je *mpi.JobError) error {
	if je.Cause != "aborted" || je.Rank != 3 || je.Code != 7 {
		return fmt.Errorf("failure %+v, want rank 3 aborted with 7", je)
	}
	return nil
}

// TestAbort: one rank aborts; every other rank's blocked call returns a
// JobError naming the rank and the code, on this agent and the others.
func TestAbort(t *testing.T) {
	errs, _ := runSessions(t, 5, func(s *mpi.Session) error {
		c := s.World()
		if c.Rank() == 3 {
			markFailure()
			return s.Abort(7)
		}
		je, err := blockedCall(c)
		if err != nil {
			return err
		}
		if err := abortedBy3(je); err != nil {
			return err
		}
		if err := mpi.Send(c, []byte{1}, 0, 1); !errors.Is(err, mpi.ErrJobFailed) {
			return fmt.Errorf("send after the failure: %v", err)
		}
		return nil
	}, abortedBy3)
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// TestAbortReachesBlockedRanks: a rank aborts as soon as Init returns,
// while the others block in a receive from any source, on its agent and
// the others. Its agent is released last, so every other rank was released
// before the abort: each gets through Init, and its receive returns a
// JobError naming the aborting rank and its code, never another cause and
// never a bare lost connection.
func TestAbortReachesBlockedRanks(t *testing.T) {
	const size, aborter, code = 6, 2, 9
	j, err := cluster.AddJob(size, mpitest.RoundRobin(len(cluster.Hosts)))
	if err != nil {
		t.Fatal(err)
	}
	if j.Host[aborter] != len(cluster.Hosts)-1 {
		t.Fatalf("rank %d runs on agent %d: it must run on the agent released last", aborter, j.Host[aborter])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	blocked := make([]bool, size)
	recvErr := make([]error, size)
	errs := j.Run(ctx, func(c *mpi.Comm) error {
		if c.Rank() == aborter {
			return c.Session().Abort(code)
		}
		blocked[c.Rank()] = true
		_, recvErr[c.Rank()] = mpi.Recv(c, make([]byte, 1), mpi.AnySource, mpi.AnyTag)
		return nil
	})
	for r := range size {
		var je *mpi.JobError
		switch {
		case r == aborter:
		case !blocked[r]:
			t.Errorf("rank %d: Init returned %v, though it was released before rank %d aborted", r, errs[r], aborter)
		case !errors.As(recvErr[r], &je) || je.Cause != "aborted" || je.Rank != aborter || je.Code != code:
			t.Errorf("rank %d: the blocked receive returned %v, want rank %d's abort with code %d", r, recvErr[r], aborter, code)
		}
	}
}

// lost2 checks TestKilledRank's failure.
func lost2(je *mpi.JobError) error {
	if je.Cause != "rank lost" || je.Rank != 2 {
		return fmt.Errorf("failure %+v, want rank 2 lost", je)
	}
	return nil
}

// TestKilledRank: a rank's connection closes without Finalize (the process
// died); every other rank's blocked call returns a JobError naming it.
func TestKilledRank(t *testing.T) {
	errs, _ := runSessions(t, 4, func(s *mpi.Session) error {
		c := s.World()
		if c.Rank() == 2 {
			markFailure()
			s.Kill()
			return nil
		}
		je, err := blockedCall(c)
		if err != nil {
			return err
		}
		return lost2(je)
	}, lost2)
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// TestAgentFail: the agent fails the job (e.g. its worker saw a process
// die); blocked calls everywhere return the reason.
func TestAgentFail(t *testing.T) {
	var job *mpitest.Job
	ready := make(chan struct{})
	go func() {
		<-ready
		job.Jobs[1].Fail(errors.New("process of rank 1 killed by signal 9"))
	}()
	j, err := cluster.AddJob(3, mpitest.RoundRobin(3))
	if err != nil {
		t.Fatal(err)
	}
	job = j
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs := j.Run(ctx, func(c *mpi.Comm) error {
		if c.Rank() == 0 {
			markFailure()
			close(ready)
		}
		je, err := blockedCall(c)
		if err != nil {
			return err
		}
		if !strings.Contains(je.Reason, "killed by signal 9") {
			return fmt.Errorf("failure %+v does not say why", je)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil && !errors.Is(err, mpi.ErrJobFailed) {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// TestInitRefused: a wrong key or a rank that is not part of the job is
// refused at Init, and Init gives up when its context ends.
func TestInitRefused(t *testing.T) {
	j, err := cluster.AddJob(2, mpitest.RoundRobin(1))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Remove()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	bad := j.Opts[0]
	bad.Key = "not the key"
	if _, err := mpi.InitWith(ctx, bad); !errors.Is(err, mpi.ErrRefused) {
		t.Errorf("wrong key: %v", err)
	}
	bad = j.Opts[0]
	bad.Job = "no-such-job"
	if _, err := mpi.InitWith(ctx, bad); !errors.Is(err, mpi.ErrRefused) {
		t.Errorf("unknown job: %v", err)
	}
	bad = j.Opts[1]
	bad.Replica = 1
	if _, err := mpi.InitWith(ctx, bad); !errors.Is(err, mpi.ErrRefused) {
		t.Errorf("replica that does not run here: %v", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	if _, err := mpi.InitWith(short, j.Opts[0]); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("init never released: %v", err)
	}
}
