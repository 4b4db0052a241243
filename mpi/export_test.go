package mpi

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

// ScribbleShm writes raw bytes into this rank's ring towards dst, as a
// misbehaving rank would.
func (c *Comm) ScribbleShm(dst int, junk []byte) error {
	return c.s.shm.out[dst].Write(junk, c.s.alive)
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
