package chunk

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
)

var log = logging.Logger("zorilla/chunk")

// Grant says whether peer from may have file h of job id, asked for with
// key, and whether this agent serves it as the job's owner (its submitter)
// rather than as one of its hosts.
type Grant func(id, key string, h blob.Hash, from peer.ID) (ok, owner bool)

// Config tunes a Service.
type Config struct {
	// MaxServing bounds the chunks served at once; a request over it is
	// answered Busy and the asker tries elsewhere or later.
	MaxServing int
	// Parallel bounds the chunks one Fetch asks for at once.
	Parallel int
	// Patience is how long a host waits for its peers to get a chunk,
	// while it gets no chunk from any of them, before it asks the owner.
	Patience time.Duration
	// Timeout bounds one request and its chunk's transfer.
	Timeout time.Duration
}

// DefaultConfig returns the settings of a real agent.
func DefaultConfig() Config {
	return Config{
		// 16 chunks of 1 MiB: enough to keep a fast link busy, while a
		// job of 64 hosts asking at once does not open 64 reads.
		MaxServing: 16,
		Parallel:   4,
		// Seeds take each chunk from the owner at once; 10 s covers a
		// slow link's chunk before the owner is asked twice for it.
		Patience: 10 * time.Second,
		Timeout:  time.Minute,
	}
}

func (c Config) validate() error {
	if c.MaxServing < 1 || c.Parallel < 1 || c.Patience <= 0 || c.Timeout <= 0 {
		return fmt.Errorf("chunk: config: MaxServing %d, Parallel %d, Patience %v and Timeout %v must be positive",
			c.MaxServing, c.Parallel, c.Patience, c.Timeout)
	}
	return nil
}

// Stats count the bytes of chunks served and fetched.
type Stats struct {
	ServedAsOwner  int64 `json:"served_as_owner"` // to hosts of jobs submitted here
	ServedAsPeer   int64 `json:"served_as_peer"`  // to other hosts of jobs running here
	FetchedOwner   int64 `json:"fetched_owner"`   // from submitters
	FetchedPeers   int64 `json:"fetched_peers"`   // from other hosts
	CorruptChunks  int64 `json:"corrupt_chunks"`  // dropped: did not match the manifest
	FilesFetched   int64 `json:"files_fetched"`   // whole files staged by chunks
	OwnerFallbacks int64 `json:"owner_fallbacks"` // chunks a host took from the owner though not its seed
}

// Service serves and fetches chunks on an endpoint. Its methods are safe
// for concurrent use.
type Service struct {
	cfg   Config
	ep    *rpc.Endpoint
	blobs *blob.Store
	slots chan struct{} // one token per chunk being served

	mfMu sync.Mutex // serializes computing manifests

	mu        sync.Mutex
	grants    []Grant
	partials  map[blob.Hash]*partial // files being fetched here, served as they fill
	manifests map[blob.Hash]Manifest // of full blobs, computed once

	servedOwner, servedPeer, fetchedOwner, fetchedPeers atomic.Int64
	corrupt, files, fallbacks                           atomic.Int64
}

// New serves Protocol on ep from the blobs in store and the files being
// fetched, to the peers a Grant (added with Allow) lets in.
func New(ep *rpc.Endpoint, store *blob.Store, cfg Config) (*Service, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, ep: ep, blobs: store, slots: make(chan struct{}, cfg.MaxServing),
		partials: map[blob.Hash]*partial{}, manifests: map[blob.Hash]Manifest{}}
	ep.Handle(Protocol, s.handle)
	return s, nil
}

// Allow adds g to the grants a request is checked against.
func (s *Service) Allow(g Grant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grants = append(s.grants, g)
}

// Stats returns the counters.
func (s *Service) Stats() Stats {
	return Stats{ServedAsOwner: s.servedOwner.Load(), ServedAsPeer: s.servedPeer.Load(),
		FetchedOwner: s.fetchedOwner.Load(), FetchedPeers: s.fetchedPeers.Load(),
		CorruptChunks: s.corrupt.Load(), FilesFetched: s.files.Load(), OwnerFallbacks: s.fallbacks.Load()}
}

func (s *Service) granted(q Request, h blob.Hash, from peer.ID) (ok, owner bool) {
	s.mu.Lock()
	gs := append([]Grant(nil), s.grants...)
	s.mu.Unlock()
	for _, g := range gs {
		if ok, owner := g(q.Job, q.Key, h, from); ok {
			return true, owner
		}
	}
	return false, false
}

// handle answers one request.
func (s *Service) handle(_ context.Context, from peer.ID, st rpc.Stream) {
	_ = st.SetDeadline(time.Now().Add(s.cfg.Timeout))
	q, h, err := ReadRequest(bufio.NewReader(st))
	if err != nil {
		_ = st.Reset()
		return
	}
	ok, owner := s.granted(q, h, from)
	if !ok {
		s.reply(st, Reply{Error: "no such job, wrong key, or not a file of the job"}, nil)
		return
	}
	if q.Chunk == ManifestChunk {
		m, err := s.manifest(h)
		if err != nil {
			s.reply(st, Reply{Error: err.Error()}, nil)
			return
		}
		s.reply(st, Reply{Manifest: &m}, nil)
		return
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		s.reply(st, Reply{Busy: true}, nil)
		return
	}
	b, have, err := s.read(h, q.Chunk)
	switch {
	case err != nil:
		s.reply(st, Reply{Error: err.Error()}, nil)
	case !have:
		s.reply(st, Reply{Missing: true}, nil)
	case s.reply(st, Reply{Size: int64(len(b))}, b) == nil:
		if owner {
			s.servedOwner.Add(int64(len(b)))
		} else {
			s.servedPeer.Add(int64(len(b)))
		}
	}
}

// reply writes p and body and ends the stream.
func (s *Service) reply(st rpc.Stream, p Reply, body []byte) error {
	err := wire.WriteJSON(st, p)
	if err == nil && len(body) > 0 {
		_, err = st.Write(body)
	}
	if err != nil {
		_ = st.Reset()
		return err
	}
	return st.Close()
}

// read returns chunk c of file h: from the blob store when it holds the
// whole file, else from a file being fetched here if that chunk arrived.
func (s *Service) read(h blob.Hash, c int) ([]byte, bool, error) {
	if size, ok := s.blobSize(h); ok {
		if int64(c) >= int64(Count(size)) {
			return nil, false, fmt.Errorf("chunk %d past the file's %d chunks", c, Count(size))
		}
		f, err := os.Open(s.blobs.Path(h))
		if err != nil {
			return nil, false, errors.New("file not held")
		}
		defer f.Close()
		b := make([]byte, Len(size, c))
		if _, err := f.ReadAt(b, int64(c)*Size); err != nil {
			return nil, false, errors.New("file not readable")
		}
		return b, true, nil
	}
	s.mu.Lock()
	p := s.partials[h]
	s.mu.Unlock()
	if p == nil {
		return nil, false, nil
	}
	return p.read(c)
}

func (s *Service) blobSize(h blob.Hash) (int64, bool) {
	if !s.blobs.Has(h) {
		return 0, false
	}
	fi, err := os.Stat(s.blobs.Path(h))
	if err != nil {
		return 0, false
	}
	return fi.Size(), true
}

// manifest computes (once) the manifest of a full blob held here,
// verifying the blob on the way.
func (s *Service) manifest(h blob.Hash) (Manifest, error) {
	// One computation at a time: the hosts of a job ask at once, and each
	// computation reads the whole file.
	s.mfMu.Lock()
	defer s.mfMu.Unlock()
	s.mu.Lock()
	m, ok := s.manifests[h]
	s.mu.Unlock()
	if ok {
		return m, nil
	}
	rc, _, err := s.blobs.Open(h)
	if err != nil {
		return Manifest{}, errors.New("file not held")
	}
	defer rc.Close()
	m, got, err := ManifestOf(rc)
	if err != nil || got != h {
		return Manifest{}, errors.New("file not readable or corrupt")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.manifests) >= 64 {
		clear(s.manifests) // a cache: a few jobs' files at a time
	}
	s.manifests[h] = m
	return m, nil
}
