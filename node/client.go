package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNotRunning means no agent answers on the data dir's socket.
var ErrNotRunning = errors.New("agent is not running")

// maxAPIResponse bounds what a client reads from the agent.
const maxAPIResponse = 16 << 20

// APIError is an error answer of the control API.
type APIError struct {
	Status  int    // HTTP status
	Message string // the agent's error message
}

func (e *APIError) Error() string { return fmt.Sprintf("agent: %s (%d)", e.Message, e.Status) }

// Client talks to the agent that runs on a data dir, through its socket.
type Client struct {
	socket string
	hc     *http.Client
}

// Dial returns a client for the agent on dataDir. It fails with
// ErrNotRunning when there is no socket; Client calls fail with it when
// nothing listens on it.
func Dial(dataDir string) (*Client, error) {
	sock := filepath.Join(dataDir, SocketFile)
	if _, err := os.Stat(sock); err != nil {
		return nil, fmt.Errorf("%w (no socket %s)", ErrNotRunning, sock)
	}
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}
	return &Client{socket: sock, hc: &http.Client{Transport: &http.Transport{DialContext: dial}}}, nil
}

// Do sends a request with in as its JSON body (none if nil) and decodes
// the answer into out (ignored if nil). An error answer is an *APIError.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %T: %w", in, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://agent"+path, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.wrap(req, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIResponse+1))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if len(b) > maxAPIResponse {
		return fmt.Errorf("%s %s: answer exceeds %d bytes", method, path, maxAPIResponse)
	}
	if resp.StatusCode >= 300 {
		var e ErrorBody
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = http.StatusText(resp.StatusCode)
		}
		return &APIError{Status: resp.StatusCode, Message: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// wrap says "not running" for a socket nothing listens on.
func (c *Client) wrap(req *http.Request, err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("%w (nothing listens on %s)", ErrNotRunning, c.socket)
	}
	return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
}

// ID asks the agent for its peer ID and addresses.
func (c *Client) ID(ctx context.Context) (IDInfo, error) {
	var info IDInfo
	return info, c.Do(ctx, http.MethodGet, "/v1/id", nil, &info)
}

// Peers asks the agent for its neighbours and how many peers it knows.
func (c *Client) Peers(ctx context.Context) (PeersInfo, error) {
	var info PeersInfo
	return info, c.Do(ctx, http.MethodGet, "/v1/peers", nil, &info)
}

// Trust asks the agent whom it runs jobs for.
func (c *Client) Trust(ctx context.Context) (TrustInfo, error) {
	var info TrustInfo
	return info, c.Do(ctx, http.MethodGet, "/v1/trust", nil, &info)
}

// EditTrust adds a peer to, or removes it from, the agent's allow or deny
// list; the change is in force when it returns.
func (c *Client) EditTrust(ctx context.Context, e TrustEdit) (TrustInfo, error) {
	var info TrustInfo
	return info, c.Do(ctx, http.MethodPost, "/v1/trust", e, &info)
}

// ReloadTrust makes the agent read its allow and deny files again.
func (c *Client) ReloadTrust(ctx context.Context) (TrustInfo, error) {
	var info TrustInfo
	return info, c.Do(ctx, http.MethodPost, "/v1/trust/reload", nil, &info)
}

// Close releases the client's idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }
