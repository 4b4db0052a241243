package router

import (
	"context"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// The lead's choices. Where MPI lets the library choose (a receive from any
// source, a probe, a test), a replicated rank's lead tells its agent its
// choice (a Decide frame), which forwards it to the agents of the backups;
// they hand it to their copies and acknowledge it. Until every live
// backup's agent holds a choice, nothing more the lead sends leaves this
// agent: a message that depends on a choice must never reach a receiver
// while a backup that may take over could still choose otherwise.

// choices are a lead copy's choices not yet held by every live backup's
// agent.
type choices struct {
	mu      sync.Mutex
	pending map[uint64]*pendingChoice
	changed chan struct{} // closed (and replaced) when a choice is held everywhere
}

type pendingChoice struct {
	frame   proto.Frame
	waiting map[int]bool // backup replicas whose agents have not acknowledged it
}

func newChoices() *choices {
	return &choices{pending: map[uint64]*pendingChoice{}, changed: make(chan struct{})}
}

func (c *choices) add(num uint64, f proto.Frame, waiting map[int]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(waiting) > 0 {
		c.pending[num] = &pendingChoice{frame: f, waiting: waiting}
	}
}

// held records that replica's agent holds choice num.
func (c *choices) held(num uint64, replica int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.pending[num]; p != nil {
		delete(p.waiting, replica)
		c.settle(num, p)
	}
}

// forget stops waiting for replica: it was lost.
func (c *choices) forget(replica int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for num, p := range c.pending {
		delete(p.waiting, replica)
		c.settle(num, p)
	}
}

// settle drops a choice held everywhere; c.mu is held.
func (c *choices) settle(num uint64, p *pendingChoice) {
	if len(p.waiting) == 0 {
		delete(c.pending, num)
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

// wait waits until every choice is held everywhere, or ctx ends.
func (c *choices) wait(ctx context.Context) error {
	c.mu.Lock()
	for len(c.pending) > 0 {
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		c.mu.Lock()
	}
	c.mu.Unlock()
	return nil
}

// waitingOn returns the frames of the choices replica's agent lacks.
func (c *choices) waitingOn(replica int) []proto.Frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []proto.Frame
	for _, p := range c.pending {
		if p.waiting[replica] {
			out = append(out, p.frame)
		}
	}
	return out
}

// choose forwards a choice of local copy pr, if it leads, to the agents of
// its live backups.
func (j *Job) choose(pr *proc, body []byte) error {
	d, err := proto.DecodeDecide(body)
	if err != nil {
		return err
	}
	if !pr.leads.Load() {
		return nil // a backup that chose on its own: its lead's choice stands
	}
	d.Rank = uint32(pr.Rank)
	f := d.Encode()
	waiting := map[int]bool{}
	var hosts []peer.ID
	j.mu.Lock()
	for k, h := range j.hosts[pr.Rank] {
		if k != pr.Replica && j.aliveLocked(Proc{pr.Rank, k}) {
			waiting[k] = true
			hosts = append(hosts, h)
		}
	}
	j.mu.Unlock()
	pr.choices.add(d.Num, f, waiting)
	for _, h := range hosts {
		l := j.linkTo(h)
		j.wg.Add(1)
		go func() { defer j.wg.Done(); l.control(f) }()
	}
	return nil
}

// choiceIn hands a lead's choice from agent p to the local copy of its
// rank, and acknowledges it.
func (j *Job) choiceIn(p peer.ID, body []byte) error {
	d, err := proto.DecodeDecide(body)
	if err != nil {
		return err
	}
	if int(d.Rank) >= j.spec.Size || replicaOn(j.hosts, int(d.Rank), p) < 0 {
		return nil // an agent speaks only for copies it runs
	}
	pr := j.local[d.Rank]
	if pr == nil || pr.leads.Load() {
		return nil // a copy that leads makes its own choices
	}
	pr.q.control(proto.MakeFrame(proto.TypeDecide, body))
	l := j.linkTo(p)
	ack := proto.DecideAck{Rank: d.Rank, Replica: uint32(pr.Replica), Num: d.Num}.Encode()
	j.wg.Add(1)
	go func() { defer j.wg.Done(); l.control(ack) }()
	return nil
}

// choiceHeld records that agent p holds a choice of a local lead.
func (j *Job) choiceHeld(p peer.ID, body []byte) error {
	a, err := proto.DecodeDecideAck(body)
	if err != nil {
		return err
	}
	r, k := int(a.Rank), int(a.Replica)
	if r >= j.spec.Size || k >= j.spec.Replicas || j.hosts[r][k] != p || j.local[r] == nil {
		return nil
	}
	j.local[r].choices.held(a.Num, k)
	return nil
}

// roleFrame tells copy pr of a replicated rank whether it leads.
func (j *Job) roleFrame(lead bool) proto.Frame {
	return proto.Role{Replicas: uint32(j.spec.Replicas), Lead: lead}.Encode()
}
