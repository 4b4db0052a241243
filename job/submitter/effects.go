package submitter

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/clock"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// do carries out one effect of the machine. Local ones (the record, the
// job folder, the feed, the tables the handlers read) are done at once;
// those that talk to the network go on goroutines of their own and come
// back as events.
func (ss *session) do(e lifecycle.Effect) {
	switch e := e.(type) {
	case lifecycle.Flood:
		ss.async(func() lifecycle.Event {
			err := ss.s.flood.Flood(ss.ctx, ss.advert(e.Key, e.Body, e.Issued), e.Radius)
			return lifecycle.Flooded{Radius: e.Radius, Err: err}
		})
	case lifecycle.Direct:
		ss.async(func() lifecycle.Event { return ss.direct(e) })
	case lifecycle.Lease:
		ss.async(func() lifecycle.Event { return ss.leaseOp(e) })
	case lifecycle.AnswerOffer:
		answer(&ss.mu, ss.offers, e.Token, e.Reply)
	case lifecycle.AnswerStop:
		answer(&ss.mu, ss.stops, e.Token, e.Err)
	case lifecycle.AnswerGiveWay:
		answer(&ss.mu, ss.stops, e.Token, e.Err)
	case lifecycle.Notify:
		ss.feed.append(e.Update)
	case lifecycle.Save:
		if err := ss.s.store.Put(ss.m.Record()); err != nil {
			log.Warnw("job record not saved", "job", ss.id, "err", err)
		}
	case lifecycle.Take:
		ss.take(e)
	case lifecycle.Watch:
		ss.reports.reset(e.Leases, e.Seqs)
	case lifecycle.Refuse:
		ss.reports.refuse(e.Lease, e.Why)
	case lifecycle.End:
		ss.end()
	default:
		ss.doFiles(e)
	}
}

// doFiles carries out the effects on the job's files and checkpoints.
func (ss *session) doFiles(e lifecycle.Effect) {
	switch e := e.(type) {
	case lifecycle.DropOutputs:
		ss.journal.forget("output")
		if err := os.RemoveAll(filepath.Join(ss.s.store.Dir(ss.id), "output")); err != nil {
			log.Warnw("output files of an earlier run not removed", "job", ss.id, "err", err)
		}
	case lifecycle.WriteChunk:
		ss.writer().send(ss.ctx, ckptOp{chunk: &ckptChunk{from: e.From, rank: e.Rank, part: e.Part, data: e.Data, eof: e.EOF}})
	case lifecycle.DropChunks:
		if ss.ckw != nil {
			ss.ckw.send(ss.ctx, ckptOp{drop: ckKey(e.Rank, e.Num)})
		}
	case lifecycle.SettleCheckpoints:
		ss.async(func() lifecycle.Event {
			var kept []lifecycle.KeptFile
			if ss.ckw != nil {
				kept = ss.ckw.settle(ss.ctx)
			}
			return lifecycle.CheckpointFiles{Files: kept, Settled: true}
		})
	case lifecycle.GrantFiles:
		ss.grants.set(e.Hashes)
		ss.s.ckpt.holdKept(ss.id, parseHashes(e.Hashes))
	case lifecycle.ReleaseFiles:
		for _, h := range parseHashes(e.Hashes) {
			ss.s.ckpt.release(ss.id, h)
		}
	case lifecycle.DropCopies:
		for p, hashes := range e.ByHolder {
			ss.async(func() lifecycle.Event { ss.dropCopies(p, hashes); return nil })
		}
	case lifecycle.RemoveCheckpointDir:
		_ = os.RemoveAll(ss.checkpointDir())
	case lifecycle.AddAddrs:
		ss.s.h.Peerstore().AddAddrs(e.Host, e.Addrs, peerstore.TempAddrTTL)
	}
}

// async runs f on a goroutine of the submitter's and hands what it
// returns (unless nil) to the loop.
func (ss *session) async(f func() lifecycle.Event) {
	ss.s.wg.Add(1)
	go func() {
		defer ss.s.wg.Done()
		if ev := f(); ev != nil {
			ss.send(ev)
		}
	}()
}

// advert is the job's advert with this agent as its submitter.
func (ss *session) advert(key string, body []byte, issued time.Time) flood.Advert {
	// Issued is the job's submission, the same in every advert of it: the
	// job's place on contested hosts is how long it has waited.
	return flood.Advert{Job: key, Submitter: ss.s.h.ID(), Addrs: ss.s.h.Addrs(), Body: body, Issued: issued}
}

func (ss *session) direct(e lifecycle.Direct) lifecycle.Event {
	d, ok := ss.s.flood.(Director)
	if !ok {
		return lifecycle.DirectFailed{Err: errors.New("the agent's flooder cannot send an advert directly")}
	}
	if err := d.Direct(ss.ctx, ss.advert(e.Key, e.Body, e.Issued), e.Peers); err != nil {
		return lifecycle.DirectFailed{Err: err}
	}
	return nil
}

// leaseTimeout bounds one lease request, a little more than the worker's
// own stream deadline.
const leaseTimeout = 10 * time.Second

// giveBackWaits are the pauses before a cancel or release is sent again.
var giveBackWaits = []time.Duration{250 * time.Millisecond, time.Second}

// leaseOp sends a lease request. A give-back (cancel, release) that did
// not get through is sent again after each of giveBackWaits: a lease left
// behind keeps the worker's slots from every other job until it expires,
// minutes later. A refusal is final: the worker answered.
func (ss *session) leaseOp(e lifecycle.Lease) lifecycle.Event {
	for try := 0; ; try++ {
		rep, err := ss.s.lease(ss.s.ctx, e.Host, e.Req)
		if err == nil || !e.GiveBack || try == len(giveBackWaits) || clock.Sleep(ss.s.ctx, giveBackWaits[try]) != nil {
			if err != nil {
				log.Infow("lease request not delivered", "job", ss.id, "op", e.Req.Op, "host", e.Host, "err", err)
			}
			return lifecycle.LeaseReply{Host: e.Host, Op: e.Req.Op, Lease: e.Req.Lease, Reply: rep, Err: err}
		}
	}
}

// lease sends one lease request and returns the worker's reply; err is
// set only when there is none.
func (s *Submitter) lease(ctx context.Context, to peer.ID, req proto.LeaseRequest) (proto.LeaseReply, error) {
	ctx, cancel := context.WithTimeout(ctx, leaseTimeout)
	defer cancel()
	var rep proto.LeaseReply
	err := s.ep.Call(ctx, to, proto.LeaseProtocol, req, &rep, proto.MaxReplySize)
	return rep, err
}

// take writes a taken report's bytes in the job folder, journals the
// report, and lets its stream acknowledge it.
func (ss *session) take(t lifecycle.Take) {
	rec := journalRecord{Lease: t.Lease, Seq: t.Report.Seq, Done: t.Report.Kind == proto.RepDone, Ready: t.Report.Kind == proto.RepReady}
	if o := t.Output; o != nil {
		if n, err := ss.write(o.File, o.Data); err != nil {
			ss.feed.append(noticeUpdate("output file " + o.File + ": " + err.Error()))
		} else {
			rec.File, rec.Size = o.File, ss.journal.wrote(ss.s.store.Dir(ss.id), o.File, n)
		}
	}
	if t.Report.Seq == 0 {
		return
	}
	if err := ss.journal.record(rec); err != nil {
		log.Warnw("report journal not written", "job", ss.id, "err", err)
	}
	ss.reports.took(t.Lease, t.Report.Seq)
}

// write appends data to a file of the job folder (stdout and stderr stay
// open; output files are opened per chunk). A file may already be there
// for a job re-attached after this agent restarted: the journal cut it
// back to what was taken, and the host sends the rest.
func (ss *session) write(file string, data []byte) (int, error) {
	if f := ss.files[file]; f != nil {
		return f.Write(data)
	}
	path := filepath.Join(ss.s.store.Dir(ss.id), file)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	if file == "stdout" || file == "stderr" {
		ss.files[file] = f
		return f.Write(data)
	}
	n, werr := f.Write(data)
	return n, errors.Join(werr, f.Close())
}

// end closes the job's files and moves the session out of the running set.
func (ss *session) end() {
	for _, f := range ss.files {
		_ = f.Close()
	}
	_ = ss.journal.close()
	ss.s.forget(ss.id)
}

// writer is the session's checkpoint writer, started on first use.
func (ss *session) writer() *ckptWriter {
	if ss.ckw == nil {
		ss.ckw = newCkptWriter(ss.ctx, ss.checkpointDir(), ss.s.blobs, ss.s.ckpt, ss.id, ss.s.h.ID())
	}
	return ss.ckw
}

// checkpointDir is where the job's checkpoint files arrive.
func (ss *session) checkpointDir() string {
	return filepath.Join(ss.s.store.Dir(ss.id), "checkpoints")
}

// dropCopies tells one holder of checkpoint copies to drop these; a holder
// that does not answer forgets them after proto.CopyTTL.
func (ss *session) dropCopies(p peer.ID, hashes []string) {
	req := proto.CopyRequest{Op: proto.CopyDrop, Job: ss.id, Key: string(ss.key), Hashes: hashes}
	ctx, cancel := context.WithTimeout(ss.s.ctx, leaseTimeout)
	defer cancel()
	st, err := ss.s.ep.Open(ctx, p, proto.CopyProtocol)
	if err != nil {
		return
	}
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(leaseTimeout))
	if wire.WriteJSON(st, req) == nil {
		var rep proto.FetchReply
		_ = wire.ReadJSON(bufio.NewReader(st), proto.MaxReplySize, &rep)
	}
}

func parseHashes(hs []string) []blob.Hash {
	out := make([]blob.Hash, 0, len(hs))
	for _, s := range hs {
		if h, err := blob.ParseHash(s); err == nil {
			out = append(out, h)
		}
	}
	return out
}
