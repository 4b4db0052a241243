package submitter

import (
	"bufio"
	"context"
	"errors"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// measureTimeout bounds the measure of an offer's sender; one that does
// not answer in time goes last in the job's rlist.
const measureTimeout = 2 * time.Second

// handleOffer measures a worker's offer and hands it to its job's
// session, then answers. An offer for a job that is not reserving is
// refused at once, so the worker offers its slots to the next job in its
// line without waiting.
func (s *Submitter) handleOffer(ctx context.Context, from peer.ID, st rpc.Stream) {
	_ = st.SetDeadline(time.Now().Add(10 * time.Second))
	var msg proto.OfferMsg
	if err := wire.ReadJSON(bufio.NewReader(st), proto.MaxOfferSize, &msg); err != nil {
		_ = st.Reset()
		return
	}
	reply := proto.OfferReply{Reason: "no such job is reserving here"}
	if ss := s.session(msg.Job); ss != nil && !ss.takingOffers.Load() {
		reply.Reason = "job takes no offers now"
	} else if ss != nil && msg.Slots > 0 && msg.Lease != "" {
		reply = ss.offer(s.measure(ctx, ss, from, msg))
	}
	if !reply.Keep {
		log.Debugw("offer refused", "job", msg.Job, "from", from, "reason", reply.Reason)
	}
	if err := wire.WriteJSON(st, reply); err != nil {
		_ = st.Reset()
		return
	}
	_ = st.Close()
}

// measure tells the session an offer has arrived (its sender has
// answered the flood), then measures its sender: the offer as the
// machine takes it.
func (s *Submitter) measure(ctx context.Context, ss *session, from peer.ID, msg proto.OfferMsg) lifecycle.Offer {
	token := ss.tokens.Add(1)
	ss.trySend(lifecycle.Arrived{Token: token, From: from})
	rtt := time.Duration(0)
	if from != s.h.ID() {
		pctx, cancel := context.WithTimeout(ctx, measureTimeout)
		d, err := s.ping.Ping(pctx, from)
		cancel()
		if err != nil {
			d = time.Hour // unmeasured: last in rlist
		}
		rtt = d
	}
	return lifecycle.Offer{Token: token, From: from, Msg: msg, RTT: rtt, Addrs: s.h.Peerstore().Addrs(from),
		Relayed: onlyRelayed(s.h.Network().ConnsToPeer(from))}
}

// onlyRelayed reports connections that all go through a relay (none
// direct); no connection at all is not judged.
func onlyRelayed(conns []network.Conn) bool {
	for _, c := range conns {
		if _, err := c.RemoteMultiaddr().ValueForProtocol(multiaddr.P_CIRCUIT); err != nil {
			return false
		}
	}
	return len(conns) > 0
}

// handleDecline counts a worker's decline for its job's session. A decline
// for a job not reserving here, or one that does not parse, is dropped;
// so is one that finds the session's queue full (the tally is advice,
// not accounting).
func (s *Submitter) handleDecline(_ context.Context, from peer.ID, st rpc.Stream) {
	_ = st.SetDeadline(time.Now().Add(5 * time.Second))
	var msg proto.DeclineMsg
	err := wire.ReadJSON(bufio.NewReader(st), proto.MaxDeclineSize, &msg)
	if err == nil {
		err = msg.Validate()
	}
	if err != nil {
		log.Debugw("bad decline", "from", from, "err", err)
		_ = st.Reset()
		return
	}
	_ = st.Close()
	if ss := s.session(msg.Job); ss != nil {
		ss.trySend(lifecycle.Decline{From: from, Msg: msg})
	}
}

// handleFetch serves one of a job's files to a worker of that job.
func (s *Submitter) handleFetch(ctx context.Context, from peer.ID, st rpc.Stream) {
	_ = st.SetDeadline(time.Now().Add(10 * time.Second))
	var req proto.FetchRequest
	if err := wire.ReadJSON(bufio.NewReader(st), proto.MaxReplySize, &req); err != nil {
		_ = st.Reset()
		return
	}
	f, size, err := s.openJobFile(req)
	if err != nil {
		_ = wire.WriteJSON(st, proto.FetchReply{Error: err.Error()})
		_ = st.Close()
		return
	}
	defer f.Close()
	_ = st.SetDeadline(time.Now().Add(10 * time.Minute))
	if err := wire.WriteJSON(st, proto.FetchReply{Size: size}); err != nil {
		_ = st.Reset()
		return
	}
	n, err := io.Copy(st, f)
	s.wholeServed.Add(n)
	if err != nil {
		_ = st.Reset()
		return
	}
	_ = st.Close()
}

// openJobFile opens a file a worker may fetch: one of the job's own, or a
// checkpoint file granted to its hosts, asked for with the job's key.
func (s *Submitter) openJobFile(req proto.FetchRequest) (io.ReadCloser, int64, error) {
	ss := s.session(req.Job)
	if ss == nil || !ss.key.Equal(job.Key(req.Key)) {
		return nil, 0, errors.New("no such job, or wrong key")
	}
	if !ss.mayFetch(req.Hash) {
		return nil, 0, errors.New("not a file of this job")
	}
	h, err := blob.ParseHash(req.Hash)
	if err != nil {
		return nil, 0, err
	}
	return s.blobs.Open(h)
}

// mayFetch reports whether a host of the job may fetch the file of this
// hash: the program, an input, or a checkpoint file granted to it.
func (ss *session) mayFetch(hash string) bool {
	return ss.own[hash] || ss.grants.has(hash)
}
