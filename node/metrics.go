package node

import (
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// collector reads the agent's state at each scrape of /metrics: nothing is
// counted twice, and an agent nobody scrapes pays nothing.
type collector struct{ n *Node }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("zorilla_"+name, help, labels, nil)
}

var (
	mPeers      = desc("peers", "Peers the overlay knows, by state (live, dead).", "state")
	mNeighbours = desc("neighbours", "Neighbours: the peers floods travel on.")
	mRTT        = desc("peer_rtt_seconds", "Smoothed round-trip times of the measured live peers.")
	mAdverts    = desc("adverts_total", "Job adverts by what happened to them (received, originated, forwarded, delivered, stale).", "event")
	mDropped    = desc("adverts_dropped_total", "Job adverts dropped, by reason.", "reason")
	mRefused    = desc("refused_total", "Requests and adverts this agent refused, by reason.", "reason")
	mJobs       = desc("jobs", "Jobs submitted through this agent, by state.", "state")
	mOffers     = desc("job_offers", "Offers held by the jobs submitted here that are still being placed.")
	mLeases     = desc("leases", "Leases held here, by state (reserved, committed).", "state")
	mProcs      = desc("processes", "Processes of jobs running here (the committed leases' slots).")
	mStaged     = desc("staged_bytes_total", "Bytes of job files staged, by how (served_as_owner, served_as_peer, fetched_owner, fetched_peers).", "how")
	mRcStreams  = desc("libp2p_rcmgr_streams", "Streams open in the libp2p resource manager's system scope, by direction.", "dir")
	mRcConns    = desc("libp2p_rcmgr_connections", "Connections open in the libp2p resource manager's system scope, by direction.", "dir")
	mRcFDs      = desc("libp2p_rcmgr_fds", "File descriptors held in the libp2p resource manager's system scope.")
	mRcMemory   = desc("libp2p_rcmgr_memory_bytes", "Memory reserved in the libp2p resource manager's system scope.")
	mBytes      = desc("libp2p_protocol_bytes_total", "Bytes sent and received per protocol (the MPI router's is /zorilla/mpi/...), by direction; only where the agent serves its web view.", "protocol", "dir")
	mRouterMsgs = desc("router_messages_total", "MSG frames the MPI router moved, by direction (sent and received on links to other agents, local from rank to rank through this agent; ranks sharing memory talk past it).", "direction")
	mRouterB    = desc("router_bytes_total", "Bytes of the MSG frames the MPI router moved (headers included), by direction as zorilla_router_messages_total.", "direction")
	mProto      = desc("libp2p_protocol_streams", "Streams open per protocol (the MPI router's included), by direction.", "protocol", "dir")
	mRdvLookups = desc("rendezvous_lookups_total", "Lookups of the network's key in the public DHT (an agent started with --bootstrap public).")
	mRdvProvide = desc("rendezvous_provides_total", "Announcements of this agent under the network's key in the public DHT.")
)

// rttBuckets cover loopback to intercontinental round trips, in seconds.
var rttBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}

// Describe lists every metric the collector may send, whatever the agent
// holds at the moment (Collect leaves out what it has none of).
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mPeers, mNeighbours, mRTT, mAdverts, mDropped, mRefused, mJobs, mOffers,
		mLeases, mProcs, mStaged, mRcStreams, mRcConns, mRcFDs, mRcMemory, mBytes, mProto, mRouterMsgs, mRouterB, mRdvLookups, mRdvProvide} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	m := metricSink{ch}
	n := c.n
	m.overlay(n)
	st := n.Stats()
	a := st.Adverts
	for ev, v := range map[string]uint64{"received": a.Received, "originated": a.Originated,
		"forwarded": a.Forwarded, "delivered": a.Delivered, "stale": a.Stale} {
		m.counter(mAdverts, float64(v), ev)
	}
	for r, v := range a.Dropped {
		m.counter(mDropped, float64(v), string(r))
	}
	for r, v := range st.Refused {
		m.counter(mRefused, float64(v), r)
	}
	s := st.Staging
	for how, v := range map[string]int64{"served_as_owner": s.ServedAsOwner, "served_as_peer": s.ServedAsPeer,
		"fetched_owner": s.FetchedOwner, "fetched_peers": s.FetchedPeers} {
		m.counter(mStaged, float64(v), how)
	}
	m.jobs(n)
	m.leases(n)
	m.resources(n)
	m.bandwidth(n)
	m.router(n)
	m.rendezvous(n)
}

func (m metricSink) rendezvous(n *Node) {
	if n.rdv == nil {
		return
	}
	st := n.rdv.Status()
	m.counter(mRdvLookups, float64(st.Lookups))
	m.counter(mRdvProvide, float64(st.Provides))
}

func (m metricSink) router(n *Node) {
	if n.mpi == nil {
		return
	}
	st := n.mpi.Stats()
	for dir, t := range map[string]router.Traffic{"sent": st.Sent, "received": st.Received, "local": st.Local} {
		m.counter(mRouterMsgs, float64(t.Frames), dir)
		m.counter(mRouterB, float64(t.Bytes), dir)
	}
}

func (m metricSink) bandwidth(n *Node) {
	if n.bw == nil {
		return
	}
	for p, st := range n.bw.GetBandwidthByProtocol() {
		m.counter(mBytes, float64(st.TotalIn), string(p), "in")
		m.counter(mBytes, float64(st.TotalOut), string(p), "out")
	}
}

// metricSink writes constant metrics, read at the scrape, to a channel.
type metricSink struct{ ch chan<- prometheus.Metric }

func (m metricSink) gauge(d *prometheus.Desc, v float64, labels ...string) {
	m.ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func (m metricSink) counter(d *prometheus.Desc, v float64, labels ...string) {
	m.ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

func (m metricSink) overlay(n *Node) {
	live, dead := 0, 0
	var sum float64
	var count uint64
	buckets := make(map[float64]uint64, len(rttBuckets))
	for _, p := range n.ov.Peers() {
		if p.Dead {
			dead++
			continue
		}
		live++
		if !p.Measured {
			continue
		}
		v := p.RTT.Seconds()
		sum, count = sum+v, count+1
		for _, b := range rttBuckets {
			if v <= b {
				buckets[b]++
			}
		}
	}
	m.gauge(mPeers, float64(live), "live")
	m.gauge(mPeers, float64(dead), "dead")
	m.gauge(mNeighbours, float64(len(n.ov.Neighbours())))
	m.ch <- prometheus.MustNewConstHistogram(mRTT, count, sum, buckets)
}

func (m metricSink) jobs(n *Node) {
	if n.sub == nil {
		return
	}
	recs, err := n.sub.List()
	if err != nil {
		log.Debugw("metrics: list jobs", "err", err)
		return
	}
	by := map[job.State]int{}
	offers := 0
	for _, st := range []job.State{job.Waiting, job.Reserving, job.Starting, job.Running, job.Done, job.Failed, job.Cancelled, job.Stopped} {
		by[st] = 0
	}
	for _, r := range recs {
		by[r.State]++
		if r.State == job.Reserving {
			offers += len(r.Offers)
		}
	}
	for st, v := range by {
		m.gauge(mJobs, float64(v), string(st))
	}
	m.gauge(mOffers, float64(offers))
}

func (m metricSink) leases(n *Node) {
	if n.lease == nil {
		return
	}
	reserved, committed, procs := 0, 0, 0
	for _, l := range n.lease.List() {
		if l.Committed {
			committed++
			procs += l.Slots
		} else {
			reserved++
		}
	}
	m.gauge(mLeases, float64(reserved), "reserved")
	m.gauge(mLeases, float64(committed), "committed")
	m.gauge(mProcs, float64(procs))
}

// resources reads the libp2p resource manager's scopes: the system's, and
// each protocol's streams.
func (m metricSink) resources(n *Node) {
	rm := n.h.Network().ResourceManager()
	_ = rm.ViewSystem(func(s network.ResourceScope) error {
		st := s.Stat()
		m.gauge(mRcStreams, float64(st.NumStreamsInbound), "inbound")
		m.gauge(mRcStreams, float64(st.NumStreamsOutbound), "outbound")
		m.gauge(mRcConns, float64(st.NumConnsInbound), "inbound")
		m.gauge(mRcConns, float64(st.NumConnsOutbound), "outbound")
		m.gauge(mRcFDs, float64(st.NumFD))
		m.gauge(mRcMemory, float64(st.Memory))
		return nil
	})
	for _, p := range n.h.Mux().Protocols() {
		_ = rm.ViewProtocol(p, func(s network.ProtocolScope) error {
			st := s.Stat()
			m.gauge(mProto, float64(st.NumStreamsInbound), string(p), "inbound")
			m.gauge(mProto, float64(st.NumStreamsOutbound), string(p), "outbound")
			return nil
		})
	}
}
