package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/atomicfile"
	"github.com/zorilla-p2p/zorilla/worker"
)

// Default file names of the allow and deny lists in the data dir, used when
// the owner names no file: `zorilla trust add` edits them.
const (
	AllowFileName = "allow"
	DenyFileName  = "deny"
)

// Trust lists: which list an edit applies to.
const (
	ListAllow = "allow"
	ListDeny  = "deny"
)

// TrustInfo answers GET /v1/trust: whom this agent runs jobs for.
type TrustInfo struct {
	// Open: every submitter not denied is accepted (--open); the allow
	// list is kept but not applied.
	Open      bool      `json:"open"`
	AllowFile string    `json:"allowFile,omitempty"` // "" for an agent with no data dir
	DenyFile  string    `json:"denyFile,omitempty"`
	Allow     []peer.ID `json:"allow"`
	Deny      []peer.ID `json:"deny"`
}

// TrustEdit is the body of POST /v1/trust: add a peer to, or remove it
// from, the allow or deny list.
type TrustEdit struct {
	Op   string  `json:"op"`   // "add" or "remove"
	List string  `json:"list"` // ListAllow or ListDeny
	Peer peer.ID `json:"peer"`
}

// trust owns the agent's allow and deny lists: the files they live in, and
// putting what they say into the worker's policy. Its lock serialises
// edits and reloads, so two `zorilla trust add` at once never lose one and
// a reload never sees a half-written file (edits replace the file whole).
type trust struct {
	mu         sync.Mutex
	allowPath  string // "" : no file, an empty list
	denyPath   string
	allowGiven bool // the owner named the allow file: it must exist
	denyGiven  bool
	open       bool
	self       peer.ID
	allow      map[peer.ID]bool
	deny       map[peer.ID]bool
}

// newTrust resolves where the lists live: the files the owner named, else
// <data-dir>/allow and <data-dir>/deny (absent: empty), else none.
func newTrust(cfg Config, self peer.ID) *trust {
	t := &trust{allowPath: cfg.AllowFile, denyPath: cfg.DenyFile, open: cfg.Open, self: self,
		allowGiven: cfg.AllowFile != "", denyGiven: cfg.DenyFile != ""}
	if t.allowPath == "" && cfg.DataDir != "" {
		t.allowPath = filepath.Join(cfg.DataDir, AllowFileName)
	}
	if t.denyPath == "" && cfg.DataDir != "" {
		t.denyPath = filepath.Join(cfg.DataDir, DenyFileName)
	}
	return t
}

// load reads both lists from their files.
func (t *trust) load() error {
	allow, err := readList(t.allowPath, t.allowGiven)
	if err != nil {
		return fmt.Errorf("allow list: %w", err)
	}
	deny, err := readList(t.denyPath, t.denyGiven)
	if err != nil {
		return fmt.Errorf("deny list: %w", err)
	}
	t.allow, t.deny = allow, deny
	return nil
}

// readList reads a peer list; a file the owner did not name may be absent.
func readList(path string, given bool) (map[peer.ID]bool, error) {
	if path == "" {
		return map[peer.ID]bool{}, nil
	}
	ids, err := worker.LoadPeerList(path)
	if err != nil && !given && errors.Is(err, os.ErrNotExist) {
		return map[peer.ID]bool{}, nil
	}
	return ids, err
}

// apply puts the lists into p: trust by default (only the agent itself and
// the allowed submitters) unless open; the deny list always.
func (t *trust) apply(p worker.Policy) worker.Policy {
	p.Allow, p.Deny, p.Self = t.allow, t.deny, t.self
	if t.open {
		p.Allow = nil
	}
	return p
}

// edit changes one list's file and the lists in memory. The file is
// replaced whole (write, then rename), so a reader never sees half of it.
func (t *trust) edit(e TrustEdit) (changed bool, err error) {
	if e.Op != "add" && e.Op != "remove" {
		return false, fmt.Errorf("trust: op %q: want add or remove", e.Op)
	}
	if err := e.Peer.Validate(); err != nil {
		return false, fmt.Errorf("trust: peer %q: %w", e.Peer, err)
	}
	path, list := t.allowPath, &t.allow
	switch e.List {
	case ListAllow:
	case ListDeny:
		path, list = t.denyPath, &t.deny
	default:
		return false, fmt.Errorf("trust: list %q: want allow or deny", e.List)
	}
	if path == "" {
		return false, errors.New("trust: this agent has no data dir to keep its lists in")
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("trust: %w", err)
	}
	out, changed, err := worker.EditPeerList(old, e.Peer, e.Op == "add")
	if err != nil {
		return false, fmt.Errorf("trust: %s: %w (fix the file by hand)", path, err)
	}
	if !changed {
		return false, nil
	}
	if err := atomicfile.Write(path, out); err != nil {
		return false, fmt.Errorf("trust: %w", err)
	}
	ids := copyList(*list)
	if e.Op == "add" {
		ids[e.Peer] = true
	} else {
		delete(ids, e.Peer)
	}
	*list = ids
	return true, nil
}

// copyList copies a list: the policy holds the old map, read without our lock.
func copyList(m map[peer.ID]bool) map[peer.ID]bool {
	out := make(map[peer.ID]bool, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (t *trust) info() TrustInfo {
	return TrustInfo{Open: t.open, AllowFile: t.allowPath, DenyFile: t.denyPath,
		Allow: sortedIDs(t.allow), Deny: sortedIDs(t.deny)}
}

func sortedIDs(m map[peer.ID]bool) []peer.ID {
	out := make([]peer.ID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// ReloadTrust reads the allow and deny lists again (SIGHUP, POST
// /v1/trust/reload) and applies them to new adverts and commits. On an
// error the lists in force stay as they were.
func (n *Node) ReloadTrust() (TrustInfo, error) {
	n.trust.mu.Lock()
	defer n.trust.mu.Unlock()
	if err := n.trust.load(); err != nil {
		return TrustInfo{}, err
	}
	return n.trust.info(), n.lease.SetPolicy(n.trust.apply(n.lease.Policy()))
}

// EditTrust adds a peer to, or removes it from, a list, in its file and in
// force at once.
func (n *Node) EditTrust(e TrustEdit) (TrustInfo, error) {
	n.trust.mu.Lock()
	defer n.trust.mu.Unlock()
	changed, err := n.trust.edit(e)
	if err != nil || !changed {
		return n.trust.info(), err
	}
	return n.trust.info(), n.lease.SetPolicy(n.trust.apply(n.lease.Policy()))
}

// Trust says whom the agent runs jobs for.
func (n *Node) Trust() TrustInfo {
	n.trust.mu.Lock()
	defer n.trust.mu.Unlock()
	return n.trust.info()
}
