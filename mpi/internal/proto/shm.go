package proto

import "fmt"

// Frames that hand co-located ranks shared-memory rings (see "Shared
// memory" in PROTOCOL.md).
const (
	TypeShm   byte = 22 // agent -> process, with WELCOME: ring files passed with SCM_RIGHTS
	TypeShmOn byte = 23 // agent -> process, before START: the peers to reach through the rings
)

// MaxShmPeers bounds the co-located peers of one process that get rings:
// two ring files each must fit one SCM_RIGHTS message (253 files).
const MaxShmPeers = 120

// Ring directions in Shm.
const (
	RingOut uint8 = 0 // this process writes, the peer reads
	RingIn  uint8 = 1 // the peer writes, this process reads
)

// ShmRing is one ring file of a Shm frame: the peer rank it connects to and
// its direction. The files travel beside the frame, in the same order.
type ShmRing struct {
	Peer uint32
	Dir  uint8
}

// Shm lists the ring files passed with it.
type Shm struct {
	Rings []ShmRing
}

// Encode returns the Shm frame.
func (m Shm) Encode() Frame {
	var w writer
	w.u32(uint32(len(m.Rings)))
	for _, r := range m.Rings {
		w.u32(r.Peer)
		w.b = append(w.b, r.Dir)
	}
	return MakeFrame(TypeShm, w.b)
}

// DecodeShm decodes a Shm body.
func DecodeShm(b []byte) (Shm, error) {
	r := reader{b: b}
	n := r.u32()
	if r.err == nil && (n > 2*MaxShmPeers || int(n)*5 != len(r.b)) {
		return Shm{}, fmt.Errorf("shm: %w: %d rings in %d bytes", ErrMalformed, n, len(r.b))
	}
	m := Shm{Rings: make([]ShmRing, n)}
	for i := range m.Rings {
		m.Rings[i].Peer = r.u32()
		if d := r.take(1); d != nil {
			m.Rings[i].Dir = d[0]
		}
		if r.err == nil && m.Rings[i].Dir > RingIn {
			return Shm{}, fmt.Errorf("shm: %w: ring direction %d", ErrMalformed, m.Rings[i].Dir)
		}
	}
	if err := r.done(); err != nil {
		return Shm{}, fmt.Errorf("shm: %w", err)
	}
	return m, nil
}

// ShmOn names the peers a process sends to and receives from through its
// rings from the start on; messages with every other rank go through the
// agent.
type ShmOn struct {
	Peers []uint32
}

// Encode returns the ShmOn frame.
func (m ShmOn) Encode() Frame {
	var w writer
	w.u32(uint32(len(m.Peers)))
	for _, p := range m.Peers {
		w.u32(p)
	}
	return MakeFrame(TypeShmOn, w.b)
}

// DecodeShmOn decodes a ShmOn body.
func DecodeShmOn(b []byte) (ShmOn, error) {
	r := reader{b: b}
	n := r.u32()
	if r.err == nil && (n > MaxShmPeers || int(n)*4 != len(r.b)) {
		return ShmOn{}, fmt.Errorf("shmon: %w: %d peers in %d bytes", ErrMalformed, n, len(r.b))
	}
	m := ShmOn{Peers: make([]uint32, n)}
	for i := range m.Peers {
		m.Peers[i] = r.u32()
	}
	if err := r.done(); err != nil {
		return ShmOn{}, fmt.Errorf("shmon: %w", err)
	}
	return m, nil
}
