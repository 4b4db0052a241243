package router

import (
	"fmt"
	"math/bits"
	"net"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
	"github.com/zorilla-p2p/zorilla/mpi/internal/shm"
)

// Shared memory between the ranks of a job on this agent. When the job is
// added, the router makes one ring (a sealed memfd, see package shm) per
// ordered pair of local ranks. A process that asks for shared memory in its
// Hello gets the files of its rings with Welcome (SCM_RIGHTS); when the job
// is released, the set of ranks that asked is frozen, and each of them is
// told (ShmOn, just before Start) which peers to reach through the rings:
// both ends of a pair always agree, and every other pair keeps the agent
// path. The router closes its own copies of the files once every local rank
// has had its own, or when the job ends: after the job, nothing of it is
// left in the agent, and the memory goes with the processes' mappings.
//
// Replicated jobs never use rings: a lead's messages must reach every copy
// of their destination, and the logs that let a backup take over live in
// the agents.

// jobShm is a job's rings on this agent; guarded by Job.mu.
type jobShm struct {
	ranks  []int               // local ranks, ascending
	files  map[[2]int]*os.File // (writer rank, reader rank) -> ring file; nil once closed
	asked  map[int]bool        // local ranks whose process asked for rings
	handed int                 // local ranks that attached (asked or not)
	on     map[int]bool        // frozen at release: the ranks that use their rings
}

// maxShmRanks bounds the local ranks of a job that get rings: k ranks need
// k(k-1) ring files, which the agent holds until they have all attached
// (992 for 32 ranks). A job with more ranks here goes through the agent.
const maxShmRanks = 32

// ringCap is the data capacity of each ring for a job with k local ranks:
// ShmRing, halved until the job's k(k-1) rings fit ShmJobBytes; 0 when
// they cannot (the job then goes through the agent).
func (c Config) ringCap(k int) int {
	if c.ShmRing <= 0 || k < 2 || k > maxShmRanks || k-1 > proto.MaxShmPeers {
		return 0
	}
	ring := 1 << (bits.Len(uint(c.ShmRing)) - 1) // a power of two
	for ring >= shm.MinCap && ring*k*(k-1) > c.ShmJobBytes {
		ring /= 2
	}
	if ring < shm.MinCap {
		return 0
	}
	return min(ring, shm.MaxCap)
}

// newJobShm makes the rings of a job, or returns nil when it has none.
func newJobShm(spec JobSpec, cfg Config) *jobShm {
	if spec.Replicas > 1 {
		return nil
	}
	var ranks []int
	for _, p := range spec.Local {
		ranks = append(ranks, p.Rank)
	}
	slices.Sort(ranks)
	ring := cfg.ringCap(len(ranks))
	if ring == 0 {
		return nil
	}
	s := &jobShm{ranks: ranks, files: map[[2]int]*os.File{}, asked: map[int]bool{}}
	for _, a := range ranks {
		for _, b := range ranks {
			if a == b {
				continue
			}
			f, err := shm.Create(fmt.Sprintf("zorilla-mpi-%d-%d", a, b), ring)
			if err != nil {
				log.Warnf("job %s: no shared memory between its ranks here: %v", spec.ID, err)
				s.close()
				return nil
			}
			s.files[[2]int{a, b}] = f
		}
	}
	return s
}

// attached records that a local rank connected and returns its Shm frame
// and duplicates of its ring files (the caller sends and closes them), or
// nothing when the rank gets no rings. j.mu is held.
func (s *jobShm) attached(rank int, asks bool) (proto.Frame, []int, error) {
	if s == nil {
		return nil, nil, nil
	}
	s.handed++
	if !asks || s.files == nil || (s.on != nil && !s.on[rank]) {
		return nil, nil, nil
	}
	s.asked[rank] = true
	var m proto.Shm
	var fds []int
	for _, peer := range s.ranks {
		if peer == rank {
			continue
		}
		for _, dir := range []uint8{proto.RingOut, proto.RingIn} {
			key := [2]int{rank, peer}
			if dir == proto.RingIn {
				key = [2]int{peer, rank}
			}
			fd, err := unix.FcntlInt(s.files[key].Fd(), unix.F_DUPFD_CLOEXEC, 0)
			if err != nil {
				closeFds(fds)
				return nil, nil, fmt.Errorf("router: duplicate ring file: %w", err)
			}
			fds = append(fds, fd)
			m.Rings = append(m.Rings, proto.ShmRing{Peer: uint32(peer), Dir: dir})
		}
	}
	return m.Encode(), fds, nil
}

// done closes the router's ring files once every local rank attached.
// j.mu is held.
func (s *jobShm) done(total int) {
	if s != nil && s.handed >= total {
		s.close()
	}
}

// release freezes the ranks that use their rings. j.mu is held.
func (s *jobShm) release() {
	if s != nil && s.on == nil {
		s.on = s.asked
		s.asked = map[int]bool{}
	}
}

// onFrame is the ShmOn frame for a rank at its start, or nil if it uses no
// rings. j.mu is held, after release.
func (s *jobShm) onFrame(rank int) proto.Frame {
	if s == nil || !s.on[rank] {
		return nil
	}
	var m proto.ShmOn
	for _, peer := range s.ranks {
		if peer != rank && s.on[peer] {
			m.Peers = append(m.Peers, uint32(peer))
		}
	}
	return m.Encode()
}

// close closes the router's ring files. j.mu is held.
func (s *jobShm) close() {
	if s == nil {
		return
	}
	for _, f := range s.files {
		_ = f.Close()
	}
	s.files = nil
}

func closeFds(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// writeWithFiles writes b to a rank's socket with fds attached to its first
// byte (SCM_RIGHTS), then closes fds.
func writeWithFiles(conn net.Conn, b []byte, fds []int) error {
	defer closeFds(fds)
	uc, ok := conn.(*net.UnixConn)
	if !ok || len(fds) == 0 {
		_, err := conn.Write(b)
		return err
	}
	n, _, err := uc.WriteMsgUnix(b, unix.UnixRights(fds...), nil)
	if err != nil {
		return err
	}
	if n < len(b) {
		_, err = conn.Write(b[n:])
	}
	return err
}
