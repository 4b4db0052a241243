package node

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node/web"
	"github.com/zorilla-p2p/zorilla/overlay"
	"github.com/zorilla-p2p/zorilla/worker"
)

// checkWeb checks Config.Web: empty (no view) or a HOST:PORT web accepts.
func checkWeb(addr string) error {
	if addr == "" {
		return nil
	}
	if _, err := web.ParseAddr(addr); err != nil {
		return fmt.Errorf("%w: web: %w", ErrInvalidConfig, err)
	}
	return nil
}

// startWeb answers the neighbours' links requests (every agent does, so a
// view elsewhere can draw it), adds GET /v1/agent and /v1/metrics to the
// control API, and serves the web view when Config.Web says where.
func (n *Node) startWeb() error {
	stop := web.ServeLinks(n.h, n.links)
	n.OnClose(func() error { stop(); return nil })
	n.Handle("GET /v1/agent", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		WriteJSON(w, http.StatusOK, n.Agent())
	}))
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{n: n})
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 4})
	n.Handle("GET /v1/metrics", metrics)
	if n.cfg.Web == "" {
		return nil
	}
	serve := web.Serve
	if n.cfg.WebNext {
		serve = web.ServeNext
	}
	s, err := serve(n.cfg.Web, web.Deps{API: n.mux, Host: n.h, ID: n.ID().String(), Self: n.links, Metrics: metrics})
	if err != nil {
		return fmt.Errorf("node: --web: %w", err)
	}
	n.web = s
	n.OnClose(s.Close)
	return nil
}

// Web is the web view's URL, or "" when the agent serves none.
func (n *Node) Web() string {
	if n.web == nil {
		return ""
	}
	return n.web.URL()
}

// links is what this agent says of itself to the web view and to its
// neighbours' views: its labels and the peers it knows, neighbours first.
func (n *Node) links() web.Self {
	s := web.Self{Labels: slices.Clone(n.cfg.Labels), Links: []web.Link{}}
	if s.Labels == nil {
		s.Labels = []string{}
	}
	peers := n.ov.Peers()
	slices.SortStableFunc(peers, func(a, b overlay.PeerInfo) int {
		if a.Neighbour == b.Neighbour {
			return 0
		}
		if a.Neighbour {
			return -1
		}
		return 1
	})
	for _, p := range peers {
		s.Links = append(s.Links, web.Link{Peer: p.ID.String(), RTTms: float64(p.RTT) / float64(time.Millisecond),
			Conn: connKind(n.h, p.ID), Neighbour: p.Neighbour, Dead: p.Dead})
	}
	return s
}

// AgentInfo answers GET /v1/agent: what the web view's agent page shows.
type AgentInfo struct {
	ID     string      `json:"id"`
	Policy PolicyInfo  `json:"policy"`
	Leases []LeaseInfo `json:"leases"`
	Procs  int         `json:"procs"` // processes of jobs running here (committed slots)
	Stats  StatsInfo   `json:"stats"`
}

// PolicyInfo is the owner's policy, as the worker applies it.
type PolicyInfo struct {
	MaxJobs  int      `json:"max_jobs"`  // J
	MaxProcs int      `json:"max_procs"` // P
	Cores    int      `json:"cores"`
	Memory   int64    `json:"memory"`
	OS       string   `json:"os"`
	Arch     string   `json:"arch"`
	Labels   []string `json:"labels"`
	Accepts  string   `json:"accepts"` // who: "every submitter not denied", or "N allowed submitters"
	Denied   int      `json:"denied"`
}

// LeaseInfo is a lease held here, without its secret key.
type LeaseInfo struct {
	Job       job.ID    `json:"job"`
	Submitter string    `json:"submitter"`
	Slots     int       `json:"slots"`
	Cores     int       `json:"cores"`
	Memory    int64     `json:"memory"`
	Committed bool      `json:"committed"`
	Expires   time.Time `json:"expires,omitzero"`
}

// Agent is what the agent page shows: policy, leases, processes, counters.
func (n *Node) Agent() AgentInfo {
	info := AgentInfo{ID: n.ID().String(), Leases: []LeaseInfo{}, Stats: n.Stats()}
	if n.lease == nil {
		return info
	}
	info.Policy = policyInfo(n.lease.Policy())
	for _, l := range n.lease.List() {
		info.Leases = append(info.Leases, LeaseInfo{Job: l.Job, Submitter: l.Submitter.String(), Slots: l.Slots,
			Cores: l.Cores, Memory: l.Memory, Committed: l.Committed, Expires: l.Expires})
		if l.Committed {
			info.Procs += l.Slots
		}
	}
	return info
}

func policyInfo(p worker.Policy) PolicyInfo {
	out := PolicyInfo{MaxJobs: p.MaxJobs, MaxProcs: p.MaxProcs, Cores: p.Cores, Memory: p.Memory,
		OS: p.OS, Arch: p.Arch, Labels: append([]string{}, p.Labels...), Denied: len(p.Deny)}
	switch {
	case p.Allow == nil:
		out.Accepts = "every submitter not denied"
	default:
		out.Accepts = fmt.Sprintf("itself and %d allowed submitter(s)", len(p.Allow))
	}
	return out
}
