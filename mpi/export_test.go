package mpi

import "github.com/zorilla-p2p/zorilla/mpi/internal/shm"

// Kill closes the connection to the agent abruptly, as if the process died:
// no Finalize, no Abort.
func (s *Session) Kill() { _ = s.conn.Close() }

// ShmPeers lists the ranks this rank reaches through shared memory.
func (c *Comm) ShmPeers() []int {
	var peers []int
	for p, r := range c.s.shm.out {
		if r != nil && c.s.shm.in[p] != nil {
			peers = append(peers, p)
		}
	}
	return peers
}

// ShmFrames returns how many frames this rank read from its rings in
// receives that polled them, and in the standby readers.
func (c *Comm) ShmFrames() (polled, standby int64) {
	return c.s.shm.polled.Load(), c.s.shm.standby.Load()
}

// EngineRuns is how many collectives the exchange engine moved here.
func (c *Comm) EngineRuns() int64 { return c.s.shm.engineRuns.Load() }

// ScribbleShm writes raw bytes into this rank's ring towards dst, as a
// misbehaving rank would. It holds the rings as a send does (shmWrite):
// the session's end unmaps them.
func (c *Comm) ScribbleShm(dst int, junk []byte) error {
	s := c.s
	s.shm.mu.RLock()
	defer s.shm.mu.RUnlock()
	if s.shm.closed {
		return s.alive()
	}
	return s.shm.out[dst].Write(junk, s.alive)
}

// Flat returns c with host-aware collectives turned off, so that tests
// compare them with the flat algorithms.
func Flat(c *Comm) *Comm {
	d := *c
	d.flat = true
	return &d
}

// Hierarchical reports whether c's collectives use the hosts.
func Hierarchical(c *Comm) bool { return c.hier() != nil }

// SiteLevel reports whether c's collectives cross between sites as a level
// of their own: the host leaders combine per site first, or (one rank per
// host) the ranks do.
func SiteLevel(c *Comm) bool {
	h := c.hier()
	return h != nil && (h.off == tagsSites || h.sites.pick() != nil)
}

// CmaIn returns how many messages this rank received single-copy.
func (c *Comm) CmaIn() int64 { return c.s.shm.cmaIn.Load() }

// CmaOff reports whether this rank sends its messages to dst as copies
// because dst refused a rendezvous.
func (c *Comm) CmaOff(dst int) bool { return c.s.shm.cmaOff[dst].Load() }

// CmaIdent returns the address of the identity word of this rank's ring
// towards dst, for a test that writes rendezvous by hand; 0 once the
// session's end unmapped the rings.
func (c *Comm) CmaIdent(dst int) uint64 {
	s := c.s
	s.shm.mu.RLock()
	defer s.shm.mu.RUnlock()
	if s.shm.closed {
		return 0
	}
	return s.shm.out[dst].Ident()
}

// RefuseCma makes every ring reader of this process refuse rendezvous
// until the returned function is called, as a kernel that forbids
// process_vm_readv would.
func RefuseCma() (restore func()) {
	old := cmaCheck
	cmaCheck = func(*shm.Ring, int, uint64) error { return shm.ErrNoCMA }
	return func() { cmaCheck = old }
}

// AlltoallvPosted reports whether c's Alltoall(v) posts every block at
// once (all of c's ranks reached through rings) rather than in pairwise
// steps.
func AlltoallvPosted(c *Comm) bool { return c.shmAll() }

// Unexpected returns the sizes of the messages from world rank src that
// arrived before a receive took them and still wait for one.
func (c *Comm) Unexpected(src int) []int {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	var sizes []int
	for _, m := range c.s.m.unexpected {
		if m.src == src {
			sizes = append(sizes, m.total)
		}
	}
	return sizes
}

// PollsCapped reports whether this rank's waits on its rings sleep at once
// (more ranks on its agent than cores).
func (c *Comm) PollsCapped() bool { return c.s.shm.poll == 0 }
