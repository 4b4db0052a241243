package pmi

import (
	"bufio"
	"context"
	"crypto/subtle"
	"fmt"
	"sync"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/zorilla-p2p/zorilla/internal/ratelimit"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
)

var log = logging.Logger("zorilla/pmi")

// Protocol carries a fence's messages between a job's agents: one Msg
// answered by one reply.
const Protocol protocol.ID = "/zorilla/pmi/1.0.0"

// Size limits of the protocol, checked on every read: a merge holds at
// most MaxBytesRank for each of up to 4096 ranks, far more than MPICH
// puts (a few hundred bytes per rank).
const (
	MaxMsgSize   = 64 << 20
	maxReplySize = 4 << 10
)

type reply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// Network joins the fences of the jobs running on this agent to their
// other agents over Protocol.
type Network struct {
	ep   *rpc.Endpoint
	mu   sync.Mutex
	jobs map[string]*Fence
}

// PeerRate bounds the fence messages one peer may send this agent: a
// host gets at most Fanout+1 per barrier of a job, and MPICH's jobs have
// a handful of barriers; a peer past it is refused before anything is
// read (counted under RefusedRate).
var PeerRate = ratelimit.Limit{Rate: 50, Burst: 200}

// RefusedRate names the refusals of PeerRate in the agent's stats.
const RefusedRate = "pmi-rate"

// NewNetwork serves Protocol on ep.
func NewNetwork(ep *rpc.Endpoint) *Network {
	n := &Network{ep: ep, jobs: map[string]*Fence{}}
	ep.Handle(Protocol, n.handle)
	if err := ep.Limit(Protocol, RefusedRate, PeerRate); err != nil {
		log.Errorw("fence messages not rate-limited", "err", err)
	}
	return n
}

// Join starts this agent's fence of a job; Leave ends it.
func (n *Network) Join(spec FenceSpec) (*Fence, error) {
	f, err := NewFence(spec, n.send)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.jobs[spec.Job] != nil {
		f.Close()
		return nil, fmt.Errorf("pmi: job %s has a fence here already", spec.Job)
	}
	n.jobs[spec.Job] = f
	return f, nil
}

// Leave closes f and forgets it.
func (n *Network) Leave(f *Fence) {
	n.mu.Lock()
	if n.jobs[f.spec.Job] == f {
		delete(n.jobs, f.spec.Job)
	}
	n.mu.Unlock()
	f.Close()
}

func (n *Network) send(ctx context.Context, to peer.ID, m Msg) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var r reply
	if err := n.ep.Call(ctx, to, Protocol, m, &r, maxReplySize); err != nil {
		return err
	}
	if !r.OK {
		return fmt.Errorf("refused: %s", r.Error)
	}
	return nil
}

func (n *Network) handle(_ context.Context, from peer.ID, st rpc.Stream) {
	_ = st.SetDeadline(time.Now().Add(30 * time.Second))
	b, err := wire.ReadFrame(bufio.NewReader(st), MaxMsgSize)
	var m Msg
	if err == nil {
		m, err = DecodeMsg(b)
	}
	if err != nil {
		log.Debugw("bad fence message", "from", from, "err", err)
		_ = st.Reset()
		return
	}
	r := reply{OK: true}
	if err := n.deliver(from, m); err != nil {
		r = reply{Error: err.Error()}
	}
	if err := wire.WriteJSON(st, r); err != nil {
		_ = st.Reset()
		return
	}
	_ = st.Close()
}

func (n *Network) deliver(from peer.ID, m Msg) error {
	n.mu.Lock()
	f := n.jobs[m.Job]
	n.mu.Unlock()
	if f == nil || subtle.ConstantTimeCompare([]byte(m.Key), []byte(f.spec.Key)) != 1 {
		return fmt.Errorf("no job %q with that key here", clip(m.Job))
	}
	return f.Deliver(from, m)
}

// DecodeMsg decodes a fence message and checks its fields' sizes.
func DecodeMsg(b []byte) (Msg, error) {
	var m Msg
	if err := wire.DecodeJSON(b, &m); err != nil {
		return Msg{}, err
	}
	if m.Epoch < 0 || m.From < 0 {
		return Msg{}, fmt.Errorf("%w: barrier %d from host %d", ErrProtocol, m.Epoch, m.From)
	}
	for k, v := range m.KVS {
		if k == "" || len(k) > MaxKey || len(v) > MaxValue {
			return Msg{}, fmt.Errorf("%w: key of %d bytes or value of %d", ErrProtocol, len(k), len(v))
		}
	}
	return m, nil
}
