package lifecycle

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Effect is what the machine asks its executor to do: one of the types
// below. Effects that talk to the network are carried out without holding
// the machine up; their outcome comes back as an input.
type Effect interface{ effect() }

// Flood floods the job's advert with a radius (flood key, body and issue
// time as given); a Flooded input answers.
type Flood struct {
	Key    string // the flood's key: the job's FloodKey for this match
	Body   []byte // the encoded Need
	Issued time.Time
	Radius int
}

// Direct sends the advert straight to a few peers, as a flood's last hop;
// a DirectFailed input answers only when it did not go out.
type Direct struct {
	Key    string
	Body   []byte
	Issued time.Time
	Peers  []peer.ID
}

// Lease sends one lease request to a host; a LeaseReply input answers.
// GiveBack (a cancel or a release) is sent again a few times when it does
// not get through: a lease left behind keeps the worker's slots from
// every other job until it expires.
type Lease struct {
	Host     peer.ID
	Req      proto.LeaseRequest
	GiveBack bool
}

// AnswerOffer answers the Offer input with the same token.
type AnswerOffer struct {
	Token uint64
	Reply proto.OfferReply
}

// AnswerStop answers the Stop input with the same token: nil once the job
// is stopped, or why it was not.
type AnswerStop struct {
	Token uint64
	Err   error
}

// AnswerGiveWay answers the GiveWay input with the same token: nil when
// the job will give slots back at its next quiet checkpoint, or why not.
type AnswerGiveWay struct {
	Token uint64
	Err   error
}

// Notify tells the job's watchers something: a state change, a line, the
// reservation's progress, or the end.
type Notify struct{ Update job.Update }

// Save writes the job's record (Machine.Record) to disk.
type Save struct{}

// Take records a report the job took: the executor writes its output line
// or file chunk (Output, when set) in the job folder, journals the report
// when it is numbered, and lets the host's stream acknowledge it.
type Take struct {
	Lease  string
	Report proto.Report // Seq, and for the journal Kind (RepDone, RepReady)
	Output *Output
}

// Output is where a taken report's bytes go in the job folder: a line of
// a stream ("stdout", "stderr"), tagged with its rank, or a chunk of a
// rank's output file (File, a name under output/).
type Output struct {
	Stream  string
	Rank    int
	Replica int
	Line    string
	File    string
	Data    []byte
}

// Watch makes the report streams of these leases the welcome ones (a new
// attempt), their hosts heard from now and their streams resuming after
// Seqs.
type Watch struct {
	Leases []string
	Seqs   map[string]uint64
}

// Refuse makes the job refuse a lease's reports from now on (its host was
// counted lost): the worker ends the job's processes there.
type Refuse struct {
	Lease string
	Why   string
}

// DropOutputs removes the output files a run that did not complete
// brought back (the next run writes them anew).
type DropOutputs struct{}

// WriteChunk hands a chunk of a rank's checkpoint file to the writer; a
// CheckpointFiles input says what it finished.
type WriteChunk struct {
	From peer.ID
	Rank int
	Part proto.CheckpointPart
	Data []byte
	EOF  bool
}

// DropChunks forgets rank's checkpoint file num still arriving.
type DropChunks struct {
	Rank int
	Num  uint64
}

// SettleCheckpoints asks the writer to finish the files whose last chunk
// came and drop the others: the run ended. A CheckpointFiles input with
// Settled answers.
type SettleCheckpoints struct{}

// GrantFiles lets the job's hosts fetch exactly these checkpoint files
// from the submitter, and holds them in its blob store for the job (a
// hold ends only with ReleaseFiles).
type GrantFiles struct{ Hashes []string }

// ReleaseFiles ends the job's hold on checkpoint files: a file no job
// holds leaves the blob store.
type ReleaseFiles struct{ Hashes []string }

// DropCopies tells the agents holding copies of checkpoint files to drop
// them (by holder); a holder that does not answer forgets them later.
type DropCopies struct{ ByHolder map[peer.ID][]string }

// RemoveCheckpointDir removes where the job's checkpoint files arrive:
// it ended.
type RemoveCheckpointDir struct{}

// AddAddrs tells the agent where to reach a host (a job re-attached after
// its agent restarted reaches its hosts before they reach it).
type AddAddrs struct {
	Host  peer.ID
	Addrs []multiaddr.Multiaddr
}

// End says the machine is over: its job ended (its record says how), or,
// Detached, the agent is stopping and leaves the running job to its hosts.
type End struct{ Detached bool }

func (Flood) effect()               {}
func (Direct) effect()              {}
func (Lease) effect()               {}
func (AnswerOffer) effect()         {}
func (AnswerStop) effect()          {}
func (AnswerGiveWay) effect()       {}
func (Notify) effect()              {}
func (Save) effect()                {}
func (Take) effect()                {}
func (Watch) effect()               {}
func (Refuse) effect()              {}
func (DropOutputs) effect()         {}
func (WriteChunk) effect()          {}
func (DropChunks) effect()          {}
func (SettleCheckpoints) effect()   {}
func (GrantFiles) effect()          {}
func (ReleaseFiles) effect()        {}
func (DropCopies) effect()          {}
func (RemoveCheckpointDir) effect() {}
func (AddAddrs) effect()            {}
func (End) effect()                 {}
