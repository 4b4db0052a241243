package node

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"sort"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/chunk"
	"github.com/zorilla-p2p/zorilla/internal/ratelimit"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// RPCLimits are the per-peer rate limits on the job protocols an agent
// serves. A stream over its limit is reset before it is read and counted
// in the agent's stats (Node.Stats). Streams an agent opens to itself are
// never limited.
type RPCLimits struct {
	// Lease limits the lease requests (cancel, commit, release, kill,
	// resume) one submitter sends this worker. 20 a second, 100 at once:
	// a job sends a handful per host, so this lets 20 jobs start here at
	// once; the worker further limits commits (worker.AbuseLimits).
	Lease ratelimit.Limit
	// Offer limits the offers one worker sends this submitter; each costs
	// a ping. 10 a second, 50 at once: a worker offers once per job, and
	// limits its own offers to one submitter to 5 a second.
	Offer ratelimit.Limit
	// Fetch limits the file fetches one worker sends this submitter. 20 a
	// second, 300 at once: a worker fetches a job's program and its inputs
	// (at most job.MaxFiles) one after the other when it stages the job.
	Fetch ratelimit.Limit
	// Chunk limits the chunk requests (package chunk) one peer sends this
	// agent. 200 a second, 1500 at once: a host asks for each chunk of a
	// file (up to chunk.MaxChunks) once from whoever has it, plus a few
	// "not yet" answers while its peers fetch.
	Chunk ratelimit.Limit
}

// DefaultRPCLimits returns the limits of a real agent (see RPCLimits).
func DefaultRPCLimits() RPCLimits {
	return RPCLimits{
		Lease: ratelimit.Limit{Rate: 20, Burst: 100},
		Offer: ratelimit.Limit{Rate: 10, Burst: 50},
		Fetch: ratelimit.Limit{Rate: 20, Burst: job.MaxFiles + 44},
		Chunk: ratelimit.Limit{Rate: 200, Burst: 1500},
	}
}

// Names the RPC limits count their refusals under in Stats.
const (
	RefusedLeaseRate = "lease-rate"
	RefusedOfferRate = "offer-in-rate"
	RefusedFetchRate = "fetch-rate"
	RefusedChunkRate = "chunk-rate"
)

// apply sets the limits on the agent's endpoint.
func (l RPCLimits) apply(ep *rpc.Endpoint) error {
	for _, x := range []struct {
		lim  ratelimit.Limit
		p    protocol.ID
		name string
	}{
		{l.Lease, proto.LeaseProtocol, RefusedLeaseRate},
		{l.Offer, proto.OfferProtocol, RefusedOfferRate},
		{l.Fetch, proto.FetchProtocol, RefusedFetchRate},
		{l.Chunk, chunk.Protocol, RefusedChunkRate},
	} {
		if err := ep.Limit(x.p, x.name, x.lim); err != nil {
			return fmt.Errorf("%w: %s limit: %w", ErrInvalidConfig, x.name, err)
		}
	}
	return nil
}

// StatsInfo answers GET /v1/stats: what the agent refused, by reason, and
// its advert counters.
type StatsInfo struct {
	// Refused counts refusals by reason: "advert-" + a flood drop reason
	// (rate-limited, bad-signature, ...), the RPC limits' names, and the
	// worker's reasons (worker.Refused*).
	Refused map[string]uint64 `json:"refused"`
	// Adverts are the flood's counters.
	Adverts flood.Stats `json:"adverts"`
	// Staging counts the bytes of job files this agent served and
	// fetched: in chunks, and whole (WholeServed, as a submitter).
	Staging StagingStats `json:"staging"`
}

// Stats returns the agent's refusal counters and advert counters.
func (n *Node) Stats() StatsInfo {
	st := StatsInfo{Refused: map[string]uint64{}}
	if n.flood != nil {
		st.Adverts = n.flood.Stats()
		for r, c := range st.Adverts.Dropped {
			st.Refused["advert-"+string(r)] = c
		}
	}
	if n.ep != nil {
		maps.Copy(st.Refused, n.ep.Refusals())
	}
	if n.work != nil {
		maps.Copy(st.Refused, n.work.Refusals())
	}
	if n.chunk != nil {
		st.Staging.Stats = n.chunk.Stats()
	}
	if n.sub != nil {
		st.Staging.WholeServed = n.sub.WholeFilesServed()
	}
	return st
}

// StagingStats are the agent's staging counters.
type StagingStats struct {
	chunk.Stats
	WholeServed int64 `json:"whole_served"` // bytes of whole files sent as submitter
}

// startChunks serves peer-assisted staging: the jobs submitted here and
// those running here grant their files to their hosts.
func (n *Node) startChunks(ep *rpc.Endpoint, blobs *blob.Store) error {
	cfg := n.cfg.Services.Chunks
	if cfg == (chunk.Config{}) {
		cfg = chunk.DefaultConfig()
	}
	cs, err := chunk.New(ep, blobs, cfg)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	cs.Allow(n.sub.GrantChunks)
	n.work.SetChunks(cs)
	n.chunk = cs
	return nil
}

// RefusalReasons lists the reasons of a Refused map, sorted.
func RefusalReasons(refused map[string]uint64) []string {
	out := make([]string, 0, len(refused))
	for r := range refused {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

func (n *Node) statsRoute() {
	n.Handle("GET /v1/stats", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		WriteJSON(w, http.StatusOK, n.Stats())
	}))
}

// Stats asks the agent for its refusal and advert counters.
func (c *Client) Stats(ctx context.Context) (StatsInfo, error) {
	var info StatsInfo
	return info, c.Do(ctx, http.MethodGet, "/v1/stats", nil, &info)
}
