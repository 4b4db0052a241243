package job

import (
	"bufio"
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Copies of checkpoint files on agents other than the submitter: a host
// puts each rank's file on one more agent near it (another host of the
// job, which therefore runs the submitter's job with the same key), which
// keeps it outside the job's folder after the job ends there, so that the
// loss of the submitter's copy, or its corruption, loses nothing. A new
// host fetches from the submitter first and from these copies when that
// fails; every copy is checked against the file's sha256. The submitter
// drops them when a newer checkpoint is complete or the job ends; a holder
// forgets copies nobody asked about for CopyTTL.

// dropCopies tells the holders of the files in cps (other than this agent
// and the hosts of the run) to drop them, in the background: a holder that
// does not answer forgets them after CopyTTL.
func (ss *session) dropCopies(cps []Checkpoint) {
	byPeer := map[peer.ID][]string{}
	for _, c := range cps {
		for _, f := range c.Files {
			for _, p := range f.Copies {
				if p != ss.s.h.ID() {
					byPeer[p] = append(byPeer[p], f.Hash)
				}
			}
		}
	}
	for p, hashes := range byPeer {
		req := proto.CopyRequest{Op: proto.CopyDrop, Job: ss.id, Key: string(ss.key), Hashes: hashes}
		ss.s.wg.Add(1)
		go func() {
			defer ss.s.wg.Done()
			ctx, cancel := context.WithTimeout(ss.s.ctx, 10*time.Second)
			defer cancel()
			st, err := ss.s.ep.Open(ctx, p, proto.CopyProtocol)
			if err != nil {
				return
			}
			defer st.Close()
			_ = st.SetDeadline(time.Now().Add(10 * time.Second))
			if wire.WriteJSON(st, req) == nil {
				var rep proto.FetchReply
				_ = wire.ReadJSON(bufio.NewReader(st), proto.MaxReplySize, &rep)
			}
		}()
	}
}
