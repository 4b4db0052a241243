package chunk

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/wire"
)

// Protocol: host -> owner or host, one Request answered by one Reply, then
// (for a chunk) exactly Reply.Size raw bytes.
const Protocol protocol.ID = "/zorilla/chunk/1.0.0"

// Sizes of the protocol, checked on every read.
const (
	// Size is the size of every chunk but a file's last. 1 MiB: a 20 MB
	// program is 20 chunks, so 16 or 64 hosts share its upload, while a
	// chunk's request costs little next to its transfer.
	Size = 1 << 20
	// MaxChunks bounds a manifest: files up to 1 GiB (blob.Config.MaxSize).
	MaxChunks = 1024
	// MaxRequestSize bounds a Request.
	MaxRequestSize = 1 << 10
	// MaxReplySize bounds a Reply: a manifest of MaxChunks hashes.
	MaxReplySize = 80 << 10
)

// ManifestChunk asks for the manifest rather than a chunk.
const ManifestChunk = -1

// Request asks for a file's manifest (Chunk == ManifestChunk) or one chunk.
type Request struct {
	Job   string `json:"job"`
	Key   string `json:"key"`
	Hash  string `json:"hash"`
	Chunk int    `json:"chunk"`
}

// Reply answers a Request. Missing: the peer may serve the file but does
// not hold that chunk yet. Busy: it serves too many chunks at once now.
type Reply struct {
	Error    string    `json:"error,omitempty"`
	Missing  bool      `json:"missing,omitempty"`
	Busy     bool      `json:"busy,omitempty"`
	Manifest *Manifest `json:"manifest,omitempty"`
	Size     int64     `json:"size,omitempty"` // raw bytes that follow
}

// Manifest is a file's size and the sha256 of each of its chunks.
type Manifest struct {
	Size   int64       `json:"size"`
	Chunks []blob.Hash `json:"chunks"`
}

// Count is the number of chunks of a file of size bytes.
func Count(size int64) int { return int((size + Size - 1) / Size) }

// Len is the length of chunk c of a file of size bytes.
func Len(size int64, c int) int64 { return min(Size, size-int64(c)*Size) }

// Check says whether m is well formed: a size within MaxChunks chunks and
// one hash per chunk.
func (m Manifest) Check() error {
	if m.Size < 0 || m.Size > MaxChunks*Size {
		return fmt.Errorf("chunk: manifest size %d out of range [0, %d]", m.Size, MaxChunks*Size)
	}
	if len(m.Chunks) != Count(m.Size) {
		return fmt.Errorf("chunk: manifest of %d bytes lists %d chunks, want %d", m.Size, len(m.Chunks), Count(m.Size))
	}
	return nil
}

// ManifestOf reads r to the end and returns its manifest and sha256.
func ManifestOf(r io.Reader) (Manifest, blob.Hash, error) {
	var m Manifest
	whole := sha256.New()
	buf := make([]byte, Size)
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if len(m.Chunks) == MaxChunks {
				return Manifest{}, blob.Hash{}, fmt.Errorf("chunk: file larger than %d bytes", MaxChunks*Size)
			}
			m.Chunks = append(m.Chunks, blob.Sum(buf[:n]))
			m.Size += int64(n)
			whole.Write(buf[:n])
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return Manifest{}, blob.Hash{}, fmt.Errorf("chunk: manifest: %w", err)
		}
	}
	var h blob.Hash
	copy(h[:], whole.Sum(nil))
	return m, h, nil
}

// ReadRequest reads and checks one Request.
func ReadRequest(r *bufio.Reader) (Request, blob.Hash, error) {
	var q Request
	if err := wire.ReadJSON(r, MaxRequestSize, &q); err != nil {
		return Request{}, blob.Hash{}, fmt.Errorf("chunk: request: %w", err)
	}
	h, err := blob.ParseHash(q.Hash)
	if err != nil {
		return Request{}, blob.Hash{}, fmt.Errorf("chunk: request: %w", err)
	}
	if q.Chunk < ManifestChunk || q.Chunk >= MaxChunks {
		return Request{}, blob.Hash{}, fmt.Errorf("chunk: request: chunk %d out of range [-1, %d)", q.Chunk, MaxChunks)
	}
	return q, h, nil
}

// ReadReply reads and checks one Reply: a chunk's Size within Size, a
// manifest well formed.
func ReadReply(r *bufio.Reader) (Reply, error) {
	var p Reply
	if err := wire.ReadJSON(r, MaxReplySize, &p); err != nil {
		return Reply{}, fmt.Errorf("chunk: reply: %w", err)
	}
	if p.Size < 0 || p.Size > Size {
		return Reply{}, fmt.Errorf("chunk: reply: size %d out of range [0, %d]", p.Size, Size)
	}
	if p.Manifest != nil {
		if err := p.Manifest.Check(); err != nil {
			return Reply{}, err
		}
	}
	return p, nil
}
