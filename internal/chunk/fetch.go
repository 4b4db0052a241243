package chunk

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/clock"
	"github.com/zorilla-p2p/zorilla/internal/wire"
)

// Errors of Fetch. Callers test them with errors.Is.
var (
	// ErrNoManifest: the owner sent no manifest (an older agent that does
	// not serve Protocol, or a failure): fetch the whole file from it.
	ErrNoManifest = errors.New("chunk: no manifest from the owner")
	// ErrTooLarge: the file is larger than the Fetch's Limit.
	ErrTooLarge = errors.New("chunk: file too large")
)

// Fetch names a file to stage and where to get it.
type Fetch struct {
	Job, Key string
	Hash     blob.Hash
	Limit    int64     // the most bytes the file may have
	Owner    peer.ID   // the submitter: the manifest and the last resort
	Hosts    []peer.ID // every host of the job, in the commit's order
	Dir      string    // where the file is assembled (a temporary file)
}

// Fetch stages f into the blob store: the manifest from the owner, each
// chunk from a peer that has it or, failing that, the owner, the whole
// file checked against f.Hash. It returns the file's size.
func (s *Service) Fetch(ctx context.Context, f Fetch) (int64, error) {
	if s.blobs.Has(f.Hash) {
		size, _ := s.blobSize(f.Hash)
		return size, nil
	}
	m, err := s.askManifest(ctx, f)
	if err != nil {
		return 0, err
	}
	if m.Size > f.Limit {
		return 0, fmt.Errorf("%w: %d bytes, %d allowed", ErrTooLarge, m.Size, f.Limit)
	}
	p, err := newPartial(f.Dir, m)
	if err != nil {
		return 0, err
	}
	defer p.remove()
	s.publish(f.Hash, p)
	defer s.unpublish(f.Hash, p)
	if err := s.fill(ctx, f, p); err != nil {
		return 0, err
	}
	n, err := s.blobs.PutHash(p.reader(), f.Hash, m.Size)
	if err != nil {
		return 0, fmt.Errorf("chunk: stage %s: %w", f.Hash, err)
	}
	s.files.Add(1)
	return n, nil
}

func (s *Service) publish(h blob.Hash, p *partial) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.partials[h] == nil {
		s.partials[h] = p
	}
}

func (s *Service) unpublish(h blob.Hash, p *partial) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.partials[h] == p {
		delete(s.partials, h)
	}
}

// askManifest asks the owner for f's manifest.
func (s *Service) askManifest(ctx context.Context, f Fetch) (Manifest, error) {
	var m Manifest
	err := s.retryOwner(ctx, func() (bool, error) {
		rep, _, err := s.ask(ctx, f.Owner, f, ManifestChunk)
		if err != nil {
			return false, err
		}
		if rep.Manifest == nil {
			return rep.Busy, fmt.Errorf("chunk: owner sent no manifest")
		}
		m = *rep.Manifest
		return false, nil
	})
	if err != nil && ctx.Err() == nil {
		return Manifest{}, fmt.Errorf("%w: %v", ErrNoManifest, err)
	}
	return m, err
}

// retryOwner calls try until it succeeds, fails for good, or the owner
// stayed busy past the timeout; busy answers are retried after a pause.
func (s *Service) retryOwner(ctx context.Context, try func() (busy bool, err error)) error {
	deadline := time.Now().Add(s.cfg.Timeout)
	wait := 20 * time.Millisecond
	for {
		busy, err := try()
		if err == nil || !busy || time.Now().After(deadline) {
			return err
		}
		if err := clock.Sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, time.Second)
	}
}

// ask sends one request to p and reads its reply and chunk.
func (s *Service) ask(ctx context.Context, p peer.ID, f Fetch, c int) (Reply, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	st, err := s.ep.Open(ctx, p, Protocol)
	if err != nil {
		return Reply{}, nil, err
	}
	defer st.Close()
	stop := context.AfterFunc(ctx, func() { _ = st.Reset() })
	defer stop()
	if err := wire.WriteJSON(st, Request{Job: f.Job, Key: f.Key, Hash: f.Hash.String(), Chunk: c}); err != nil {
		return Reply{}, nil, err
	}
	br := bufio.NewReader(st)
	rep, err := ReadReply(br)
	if err != nil {
		return Reply{}, nil, err
	}
	if rep.Error != "" {
		return rep, nil, fmt.Errorf("chunk: %s: %s", p, rep.Error)
	}
	if c == ManifestChunk || rep.Missing || rep.Busy {
		return rep, nil, nil
	}
	b := make([]byte, rep.Size)
	if _, err := io.ReadFull(br, b); err != nil {
		return Reply{}, nil, fmt.Errorf("chunk: %s: chunk %d: %w", p, c, err)
	}
	return rep, b, nil
}

// fill fetches every chunk of p with at most Parallel at once: first those
// this host seeds, then the others starting at a point of its own.
func (s *Service) fill(ctx context.Context, f Fetch, p *partial) error {
	pl := newPlan(f, len(p.m.Chunks), s.ep.Self())
	order := pl.order()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range min(s.cfg.Parallel, max(len(order), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				if err := s.get(ctx, f, p, pl, c); err != nil {
					select {
					case errs <- err:
					default:
					}
					cancel()
				}
			}
		}()
	}
feed:
	for _, c := range order {
		select {
		case next <- c:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	return ctx.Err()
}
