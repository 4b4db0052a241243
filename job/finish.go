package job

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// setState moves the job's record to state st, saves it and tells watchers.
func (ss *session) setState(st State, why string) {
	rec, err := Transition(ss.rec, st, time.Now(), why)
	if err != nil {
		log.Warnw("illegal job transition", "job", ss.id, "err", err)
		return
	}
	ss.rec = rec
	ss.save()
	ss.feed.append(Update{Kind: "state", State: st, Note: why})
}

func (ss *session) save() {
	if err := ss.s.store.Put(ss.rec); err != nil {
		log.Warnw("job record not saved", "job", ss.id, "err", err)
	}
}

// finish records how the job ended and closes its feed.
func (ss *session) finish(err error) {
	if errors.Is(err, errDetached) {
		ss.closeOutputs()
		ss.feed.append(Update{Kind: "output", Rank: -1, Stream: "stderr",
			Line: "this agent is stopping; the job goes on, and this agent takes it back when it starts again"})
		rec := ss.rec
		ss.feed.append(Update{Kind: "end", State: rec.State, Record: &rec})
		ss.s.forget(ss.id)
		return
	}
	var c errCancelled
	var st errStopped
	switch {
	case err == nil:
		ss.setState(Done, "")
	case errors.As(err, &st):
		ss.finishStopped(st)
		return
	case errors.As(err, &c):
		ss.setState(Cancelled, c.why)
	default:
		if ss.exitCode == 0 {
			ss.exitCode = 1
		}
		ss.setState(Failed, err.Error())
	}
	ss.rec.Exit = ss.exitCode
	ss.dropCheckpoints()
	ss.save()
	rec := ss.rec
	ss.feed.append(Update{Kind: "end", State: rec.State, Record: &rec})
	ss.closeOutputs()
	ss.s.forget(ss.id)
}

// output writes one event's line or file chunk into the job folder and, for
// lines, to watchers. It returns the file written (relative to the job
// folder) and its size after, for the journal.
func (ss *session) output(from peer.ID, e proto.Report) (string, int64) {
	dir := ss.s.store.Dir(ss.id)
	switch e.Kind {
	case proto.RepOutput:
		line := string(bytes.TrimRight(e.Data, "\n"))
		stream := e.Stream
		if stream != "stdout" && stream != "stderr" {
			stream = "stderr"
		}
		ss.feed.append(Update{Kind: "output", Rank: e.Rank, Replica: e.Replica, Stream: e.Stream, Line: line})
		if w := ss.outFile(stream); w != nil {
			n, _ := fmt.Fprintf(w, "[%s] %s\n", procTag(e.Rank, e.Replica), line)
			return stream, ss.journal.wrote(dir, stream, n)
		}
	case proto.RepFile:
		path, err := ss.writeChunk(from, e)
		if err != nil {
			ss.feed.append(Update{Kind: "output", Rank: -1, Stream: "stderr",
				Line: fmt.Sprintf("output file %s of rank %d: %v", e.Name, e.Rank, err)})
			return "", 0
		}
		if path == "" {
			return "", 0
		}
		rel, _ := filepath.Rel(dir, path)
		return rel, ss.journal.wrote(dir, rel, len(e.Data))
	}
	return "", 0
}

func (ss *session) outFile(stream string) *os.File {
	if f := ss.files[stream]; f != nil {
		return f
	}
	f, err := os.OpenFile(filepath.Join(ss.s.store.Dir(ss.id), stream), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		log.Warnw("job output file", "job", ss.id, "err", err)
		return nil
	}
	ss.files[stream] = f
	return f
}

// writeChunk appends an output file chunk under <job folder>/output, as
// OutputName(name, rank): each rank's file comes back under a name of its
// own, so ranks sharing a host never overwrite each other's. Of a
// replicated rank, the first copy that sends a file is kept and the other
// copies' chunks of it are dropped (every copy computes the same).
func (ss *session) writeChunk(from peer.ID, e proto.Report) (string, error) {
	if err := plainFileName(e.Name); err != nil {
		return "", err
	}
	if e.Rank < 0 || e.Rank >= ss.sub.Desc.Nodes {
		return "", fmt.Errorf("from rank %d of a job of %d", e.Rank, ss.sub.Desc.Nodes)
	}
	dir := filepath.Join(ss.s.store.Dir(ss.id), "output")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	name := OutputName(e.Name, e.Rank)
	copyID := fmt.Sprintf("%s/%d", from, e.Replica)
	if owner, ok := ss.outputs[name]; !ok {
		ss.outputs[name] = copyID
	} else if owner != copyID {
		return "", nil // another copy of the rank sends it
	}
	// A file may already be there only for a job re-attached after this
	// agent restarted: the journal cut it back to what was taken, and the
	// host sends the rest, so chunks are always appended.
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(e.Data)
	return path, errors.Join(werr, f.Close())
}

// OutputName is the name an output file of a rank comes back under:
// "result.txt" of rank 3 is "result.txt.3".
func OutputName(name string, rank int) string { return fmt.Sprintf("%s.%d", name, rank) }

func (ss *session) closeOutputs() {
	for _, f := range ss.files {
		_ = f.Close()
	}
	if ss.journal != nil {
		_ = ss.journal.close()
	}
}

// plainFileName refuses names that could leave the job folder.
func plainFileName(name string) error {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return fmt.Errorf("file name %q is not a plain name", name)
	}
	return nil
}

func sortInts(a []int) []int { sort.Ints(a); return a }

// procTag names a process in output, as `zorilla submit` prints it: its
// rank, and ".k" for copy k > 0 of a replicated rank.
func procTag(rank, replica int) string {
	if replica == 0 {
		return fmt.Sprint(rank)
	}
	return fmt.Sprintf("%d.%d", rank, replica)
}
