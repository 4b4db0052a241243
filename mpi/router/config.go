package router

import (
	"fmt"
	"os"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// Config tunes a Router. Start from DefaultConfig and change what you need.
type Config struct {
	// SocketMode is the permission of the MPI socket. 0600 by default: rank
	// processes run as the agent's user, and nobody else may connect. Use
	// 0660 (with the socket's directory group set) when ranks run as another
	// user.
	SocketMode os.FileMode
	// MaxData is the most message bytes in one fragment. 512 KiB: large
	// enough that per-fragment costs (a frame, a system call, often a
	// wake-up of the process at the other end of a socket) vanish beside
	// the data, small enough that large messages stream through both agents
	// (pipelined) instead of being stored and forwarded whole. Between two
	// ranks on one agent, 512 KiB moved a MiB in 40% less time than 128 KiB.
	MaxData int
	// Window is the flow-control window of one (job, remote agent) stream in
	// bytes: what a sender may have in flight towards the receiving agent.
	// 4 MiB: 8 fragments, enough to fill a loopback or LAN path. A job with
	// many agents gets smaller windows (see JobBuffer).
	Window int
	// JobBuffer bounds what the remote agents of one job together may have
	// in flight towards this agent: each stream's window is JobBuffer
	// divided among the job's remote agents, at most Window and at least
	// two fragments. 64 MiB: jobs on up to 16 agents get the full Window,
	// and a job on 600 agents cannot make an agent hold 2.4 GB for it.
	JobBuffer int
	// QueueBytes bounds what local senders queue towards one local rank
	// before they are made to wait. 4 MiB for the same reason as Window.
	QueueBytes int
	// SocketBuffer is the send and receive buffer asked of the kernel for
	// each rank's socket (it gives at most net.core.wmem_max and rmem_max).
	// 4 MiB: with the default 208 KiB a large message stalled the sender
	// and woke the agent every 208 KiB.
	SocketBuffer int
	// HelloTimeout bounds the handshake of a new socket connection or link
	// stream. 10s: a process that connects and says nothing is dropped.
	HelloTimeout time.Duration
	// OpenTimeout bounds opening a link to a remote agent. 10s, like the
	// agents' other request timeouts.
	OpenTimeout time.Duration
	// HeartbeatInterval is how often an idle link pings. 1s.
	HeartbeatInterval time.Duration
	// HeartbeatTimeout is how long a remote agent may stay silent (no frame
	// of it on any stream of the job) before it counts as lost and the job
	// fails. 5s: five missed heartbeats, so a busy machine is not mistaken
	// for a dead one, while a blocked call still errors within seconds.
	// Silence is counted at checks half an interval apart, a late check
	// counting one interval at most (watch.go).
	HeartbeatTimeout time.Duration
	// LogBytes bounds the log of one local copy of a rank: what it sent
	// that some live copy of the destination has not acknowledged. 32 MiB:
	// more than a copy's links can have in flight (their windows), so a
	// lead never waits on its log; a backup that runs that far ahead of its
	// lead waits for it.
	LogBytes int
	// AckDelay is how long a receiving agent gathers delivery positions
	// before acknowledging them (at once after every ackEvery bytes), for
	// a replicated job; an unreplicated one waits longer (ackDelay). 2ms:
	// acknowledgements of a burst go out together, and logs stay short.
	AckDelay time.Duration
	// EveryCopySends makes every copy of a replicated rank transmit, not
	// just its lead: twice the traffic at r = 2. For measuring what
	// lead-only sending saves; off on a real agent.
	EveryCopySends bool
	// ShmRing is the data capacity of the shared-memory ring from one
	// local rank to another (a power of two at most; 0 turns shared memory
	// off, and ranks on one agent then talk through it). 1 MiB: two
	// fragments, so a large message streams while the reader copies out.
	ShmRing int
	// ShmJobBytes bounds the rings of one job on this agent: with k local
	// ranks, k(k-1) rings share it (each halved until they fit; a job
	// whose rings would fall below 4 KiB talks through the agent). 128 MiB:
	// nine ranks get full rings (72 MiB).
	ShmJobBytes int
	// MaxPending bounds socket connections that have not finished their
	// handshake. 64: far more than ranks start at once on one machine, few
	// enough that junk connections cannot pile up.
	MaxPending int
}

// DefaultConfig returns the configuration for a real agent.
func DefaultConfig() Config {
	return Config{
		SocketMode:        0o600,
		MaxData:           512 << 10,
		Window:            4 << 20,
		JobBuffer:         64 << 20,
		QueueBytes:        4 << 20,
		SocketBuffer:      4 << 20,
		HelloTimeout:      10 * time.Second,
		OpenTimeout:       10 * time.Second,
		HeartbeatInterval: time.Second,
		HeartbeatTimeout:  5 * time.Second,
		MaxPending:        64,
		LogBytes:          32 << 20,
		AckDelay:          2 * time.Millisecond,
		ShmRing:           1 << 20,
		ShmJobBytes:       128 << 20,
	}
}

// ackEvery is how many data bytes a local copy receives before its
// position is acknowledged at once, without waiting for AckDelay.
const ackEvery = 1 << 20

// soloAckFactor stretches AckDelay for a job without replicas (up to the
// heartbeat interval): no backup waits for its acknowledgements, which
// only trim its logs (kept for a reconnect's resend) and let a finalizing
// copy's Bye go; each round costs both agents writes, reads and wake-ups
// that latency-bound traffic feels.
const soloAckFactor = 10

// ackDelay is how long a receiving agent of a job with replicas copies of
// each rank gathers delivery positions: AckDelay, or for an unreplicated
// job soloAckFactor times that, at most the heartbeat interval.
func (c Config) ackDelay(replicas int) time.Duration {
	if replicas > 1 {
		return c.AckDelay
	}
	return min(soloAckFactor*c.AckDelay, c.HeartbeatInterval)
}

// frameMax is the largest frame (header included) a MSG can take.
func (c Config) frameMax() int { return proto.HeaderLen + proto.MsgHeaderLen + c.MaxData }

// linkWindow is the window this agent gives each stream of a job with
// remotes remote agents: an equal share of JobBuffer, within [two
// fragments, Window].
func (c Config) linkWindow(remotes int) int {
	w := c.Window
	if remotes > 0 {
		w = min(w, c.JobBuffer/remotes)
	}
	return max(w, 2*c.frameMax())
}

// bodyMax is the largest frame body a router reads from a rank or a link.
func (c Config) bodyMax() int { return max(proto.MaxControl, proto.MsgHeaderLen+c.MaxData) }

func (c Config) validate() error {
	switch {
	case c.SocketMode&^0o777 != 0 || c.SocketMode&0o600 != 0o600:
		return fmt.Errorf("router config: socket mode %o must be permission bits including 0600", c.SocketMode)
	case c.MaxData < 1 || c.MaxData > 16<<20:
		return fmt.Errorf("router config: MaxData %d outside 1..16 MiB", c.MaxData)
	case c.Window < 2*c.frameMax():
		return fmt.Errorf("router config: Window %d below two fragments (%d)", c.Window, 2*c.frameMax())
	case c.JobBuffer < c.Window:
		return fmt.Errorf("router config: JobBuffer %d below one Window (%d)", c.JobBuffer, c.Window)
	case c.SocketBuffer < 0:
		return fmt.Errorf("router config: SocketBuffer %d is negative", c.SocketBuffer)
	case c.QueueBytes < c.frameMax():
		return fmt.Errorf("router config: QueueBytes %d below one fragment (%d)", c.QueueBytes, c.frameMax())
	case c.HelloTimeout <= 0 || c.OpenTimeout <= 0:
		return fmt.Errorf("router config: timeouts must be positive")
	case c.HeartbeatInterval <= 0 || c.HeartbeatTimeout < 2*c.HeartbeatInterval:
		return fmt.Errorf("router config: heartbeat timeout %v must be at least twice the interval %v",
			c.HeartbeatTimeout, c.HeartbeatInterval)
	case c.LogBytes < c.frameMax():
		return fmt.Errorf("router config: LogBytes %d below one fragment (%d)", c.LogBytes, c.frameMax())
	case c.AckDelay <= 0 || c.AckDelay > c.HeartbeatInterval:
		return fmt.Errorf("router config: AckDelay %v must be positive and at most the heartbeat interval", c.AckDelay)
	case c.ShmRing < 0 || c.ShmRing > 64<<20 || c.ShmJobBytes < 0:
		return fmt.Errorf("router config: ShmRing %d must be in 0..64 MiB and ShmJobBytes %d not negative", c.ShmRing, c.ShmJobBytes)
	case c.MaxPending < 1:
		return fmt.Errorf("router config: MaxPending %d", c.MaxPending)
	}
	return nil
}
