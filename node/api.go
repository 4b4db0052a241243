package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/overlay"
)

// ErrRunning is returned when another agent already serves the data dir.
var ErrRunning = errors.New("node: another agent is running on this data dir")

// maxSocketPath is the longest unix socket path every unix accepts
// (sun_path is 104 bytes on the BSDs, 108 on Linux, NUL included).
const maxSocketPath = 103

// IDInfo answers GET /v1/id.
type IDInfo struct {
	ID      peer.ID  `json:"id"`
	Addrs   []string `json:"addrs"` // full multiaddrs, ending in /p2p/<id>
	Network string   `json:"network,omitempty"`
	// Reachability is whether others can dial this agent: public, private
	// or unknown (libp2p's AutoNAT tells an agent joining through the
	// public DHT).
	Reachability string `json:"reachability,omitempty"`
	// Reachable and Unreachable are the addresses AutoNAT v2 has found
	// others can, or cannot, dial (an agent joining through the public DHT).
	Reachable   []string `json:"reachable,omitempty"`
	Unreachable []string `json:"unreachable,omitempty"`
	// Rendezvous is how finding the network's agents through the public
	// DHT goes, for an agent started with --bootstrap public.
	Rendezvous *overlay.RendezvousStatus `json:"rendezvous,omitempty"`
	// Sandbox is what the sandbox of jobs enforces here.
	Sandbox *SandboxInfo `json:"sandbox,omitempty"`
	// Web is the web view's URL, when the agent serves one.
	Web string `json:"web,omitempty"`
}

// PeersInfo answers GET /v1/peers.
type PeersInfo struct {
	// Neighbours are the peers floods travel on, as Overlay.Neighbours
	// orders them.
	Neighbours []NeighbourInfo `json:"neighbours"`
	Known      int             `json:"known"` // live peers known
	Dead       int             `json:"dead"`  // peers marked dead for now
}

// NeighbourInfo is a neighbour as the overlay sees it, and how this agent
// is connected to it.
type NeighbourInfo struct {
	overlay.PeerInfo
	Conn string `json:"conn"` // ConnDirect, ConnRelayed or ConnNone
}

// How an agent is connected to a peer: some direct connection, only
// connections through a relay, or none at the moment.
const (
	ConnDirect  = "direct"
	ConnRelayed = "relayed"
	ConnNone    = "none"
)

// connKind says how h is connected to p.
func connKind(h host.Host, p peer.ID) string {
	kind := ConnNone
	for _, c := range h.Network().ConnsToPeer(p) {
		if _, err := c.RemoteMultiaddr().ValueForProtocol(ma.P_CIRCUIT); err != nil {
			return ConnDirect
		}
		kind = ConnRelayed
	}
	return kind
}

// ErrorBody is the JSON body of every API error.
type ErrorBody struct {
	Error string `json:"error"`
}

func (n *Node) routes() {
	n.Handle("GET /v1/id", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		WriteJSON(w, http.StatusOK, n.idInfo())
	}))
	n.Handle("GET /v1/peers", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		WriteJSON(w, http.StatusOK, peersInfo(n.h, n.ov.Neighbours(), n.ov.Peers()))
	}))
	n.Handle("GET /v1/trust", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		WriteJSON(w, http.StatusOK, n.Trust())
	}))
	n.Handle("POST /v1/trust", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e TrustEdit
		if err := ReadJSON(r, maxTrustEdit, &e); err != nil {
			WriteError(w, http.StatusBadRequest, err)
			return
		}
		info, err := n.EditTrust(e)
		if err != nil {
			WriteError(w, http.StatusBadRequest, err)
			return
		}
		WriteJSON(w, http.StatusOK, info)
	}))
	n.Handle("POST /v1/trust/reload", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		info, err := n.ReloadTrust()
		if err != nil {
			WriteError(w, http.StatusUnprocessableEntity, err)
			return
		}
		WriteJSON(w, http.StatusOK, info)
	}))
}

// maxTrustEdit bounds a TrustEdit body: a peer ID is ~52 characters.
const maxTrustEdit = 1024

func (n *Node) idInfo() IDInfo {
	info := IDInfo{ID: n.ID(), Addrs: []string{}, Network: n.cfg.Network}
	info.Reachability, _ = n.reach.Load().(string)
	if n.web != nil {
		info.Web = n.web.URL()
	}
	if n.sandbox.Users != "" {
		sb := n.sandbox
		info.Sandbox = &sb
	}
	if n.nat != nil {
		info.Reachable, info.Unreachable = n.nat.confirmedAddrs()
	}
	if n.rdv != nil {
		st := n.rdv.Status()
		info.Rendezvous = &st
	}
	for _, a := range n.Addrs() {
		info.Addrs = append(info.Addrs, a.String())
	}
	return info
}

// peersInfo lists the neighbours, in order, with what is known of them.
func peersInfo(h host.Host, nb []peer.ID, peers []overlay.PeerInfo) PeersInfo {
	byID := make(map[peer.ID]overlay.PeerInfo, len(peers))
	out := PeersInfo{Neighbours: []NeighbourInfo{}}
	for _, p := range peers {
		byID[p.ID] = p
		if p.Dead {
			out.Dead++
		} else {
			out.Known++
		}
	}
	for _, id := range nb {
		if p, ok := byID[id]; ok {
			out.Neighbours = append(out.Neighbours, NeighbourInfo{PeerInfo: p, Conn: connKind(h, id)})
		}
	}
	return out
}

// WriteJSON writes v as the JSON body of a response with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, fmt.Errorf("encode %T: %w", v, err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// WriteError writes err as an ErrorBody with the given status.
func WriteError(w http.ResponseWriter, status int, err error) {
	b, _ := json.Marshal(ErrorBody{Error: err.Error()})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// ReadJSON decodes a request body of at most limit bytes into v, strictly
// (unknown fields and trailing data are refused). Handlers answer its
// error with 400.
func ReadJSON(r *http.Request, limit int64, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	if int64(len(b)) > limit {
		return fmt.Errorf("request body exceeds %d bytes", limit)
	}
	return wire.DecodeJSON(b, v)
}

// checkNotRunning fails with ErrRunning if an agent answers on dir's
// socket, and with ErrDataDir if the socket's path is too long for unix.
func checkNotRunning(dir string) error {
	path := filepath.Join(dir, SocketFile)
	if len(path) > maxSocketPath {
		return fmt.Errorf("%w: socket path %s is longer than %d bytes; use a shorter data dir", ErrDataDir, path, maxSocketPath)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("%w (%s)", ErrRunning, dir)
	}
	return nil
}

// apiServer serves the control API on <data-dir>/agent.sock.
type apiServer struct {
	srv     *http.Server
	timeout time.Duration
	done    chan struct{}
}

// serveAPI listens on the data dir's socket, mode 0600. A socket left by
// an agent that died is replaced; one that answers means another agent
// runs on this data dir.
func serveAPI(dir string, h http.Handler, timeout time.Duration) (*apiServer, error) {
	path := filepath.Join(dir, SocketFile)
	if err := checkNotRunning(dir); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: remove stale socket: %w", ErrDataDir, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("%w: listen on %s: %w", ErrDataDir, path, err)
	}
	// The data dir is 0700 when we created it; the socket itself is 0600
	// in case the owner opened the directory up.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("%w: chmod socket: %w", ErrDataDir, err)
	}
	a := &apiServer{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 5 * time.Second,
			IdleTimeout:       time.Minute,
		},
		timeout: timeout,
		done:    make(chan struct{}),
	}
	go func() {
		defer close(a.done)
		if err := a.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Errorw("control API stopped", "err", err)
		}
	}()
	return a, nil
}

// Close stops accepting requests, waits up to the timeout for those in
// flight, then cuts them. The socket file is removed.
func (a *apiServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	err := a.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = a.srv.Close()
	}
	<-a.done
	if err != nil {
		return fmt.Errorf("node: close control API: %w", err)
	}
	return nil
}
