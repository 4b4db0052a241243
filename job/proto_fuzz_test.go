package job

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/wire"
)

// FuzzProtocolMessages feeds arbitrary frames to every message the job
// protocols read off the wire (offer, lease, fetch, report), with the size
// limit each is read with: none may panic, and any message accepted can
// be sent again (encodes, and decodes to the same JSON).
func FuzzProtocolMessages(f *testing.F) {
	seed := func(v any) {
		var b bytes.Buffer
		if err := wire.WriteJSON(&b, v); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	seed(OfferMsg{Job: "j1", Lease: "k", Slots: 2, Cores: 2, Memory: 1 << 20, Expires: time.Unix(1e9, 0).UTC()})
	seed(OfferReply{Keep: true})
	seed(LeaseRequest{Op: OpCommit, Job: "j1", Lease: "k", Commit: &Commit{Key: "s", N: 1, R: 1,
		Program: FileRef{Name: "p", Hash: "00", Size: 1}, Procs: []Proc{{}}, RankHost: [][]int{{0}}}})
	seed(LeaseReply{OK: true, Lease: "k2"})
	seed(FetchRequest{Job: "j1", Key: "s", Hash: "00"})
	seed(FetchReply{Size: 9})
	seed(ReportHello{Job: "j1", Key: "s", Lease: "k"})
	seed(ReportAck{Seq: 3})
	seed(Report{Kind: RepOutput, Seq: 1, Stream: "stdout", Data: []byte("hi\n")})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, c := range []struct {
			v     func() any
			limit int
		}{
			{func() any { return new(OfferMsg) }, MaxOfferSize},
			{func() any { return new(OfferReply) }, MaxReplySize},
			{func() any { return new(LeaseRequest) }, MaxLeaseSize},
			{func() any { return new(LeaseReply) }, MaxReplySize},
			{func() any { return new(FetchRequest) }, MaxReplySize},
			{func() any { return new(FetchReply) }, MaxReplySize},
			{func() any { return new(ReportHello) }, MaxReplySize},
			{func() any { return new(ReportAck) }, MaxReplySize},
			{func() any { return new(Report) }, MaxReportSize},
		} {
			v := c.v()
			if err := wire.ReadJSON(bufio.NewReader(bytes.NewReader(b)), c.limit, v); err != nil {
				continue
			}
			var again bytes.Buffer
			if err := wire.WriteJSON(&again, v); err != nil {
				t.Fatalf("%T accepted but cannot be sent: %v", v, err)
			}
			back := c.v()
			if err := wire.ReadJSON(bufio.NewReader(&again), again.Len(), back); err != nil {
				t.Fatalf("%T re-sent does not decode: %v", v, err)
			}
			j1, _ := json.Marshal(v)
			j2, _ := json.Marshal(back)
			if !bytes.Equal(j1, j2) {
				t.Fatalf("%T changed on the way: %s, then %s", v, j1, j2)
			}
		}
	})
}
