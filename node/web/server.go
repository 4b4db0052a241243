package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/host"
)

var log = logging.Logger("zorilla/web")

// ErrAddr is wrapped by the errors of a --web address that does not parse
// or cannot be listened on.
var ErrAddr = errors.New("web: bad address")

// DefaultAddr is where the view listens unless told otherwise: loopback,
// since it shows peer IDs and job names.
const DefaultAddr = "127.0.0.1:4080"

// Deps is what the view reads from its agent.
type Deps struct {
	// API is the agent's control API. The view forwards to it only the
	// GET routes it lists (see routes), so it can change nothing.
	API http.Handler
	// Host asks the neighbours for their links; nil draws this agent's
	// own links only.
	Host host.Host
	// Self is this agent's ID, labels and links, neighbours first.
	ID   string
	Self func() Self
	// Metrics serves /metrics; nil leaves it out.
	Metrics http.Handler
}

// Server is a running view.
type Server struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{}
}

// ParseAddr checks a --web address: HOST:PORT with an IP literal or
// "localhost" as host and a port from 0 (any free one) to 65535. It says
// whether the address is loopback.
func ParseAddr(addr string) (loopback bool, err error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("%w %q: %w (want HOST:PORT, e.g. %s, or off)", ErrAddr, addr, err, DefaultAddr)
	}
	if n, err := strconv.ParseUint(p, 10, 16); err != nil || (n == 0 && p != "0") {
		return false, fmt.Errorf("%w %q: port %q is not a number from 0 to 65535", ErrAddr, addr, p)
	}
	if h == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(h)
	if ip == nil {
		return false, fmt.Errorf("%w %q: host %q is not an IP address (or localhost)", ErrAddr, addr, h)
	}
	return ip.IsLoopback(), nil
}

// Warning is what to tell the user when the view listens on addr: nothing
// for loopback.
func Warning(addr string) string {
	if lo, err := ParseAddr(addr); err != nil || lo {
		return ""
	}
	return fmt.Sprintf("the web view on %s is open to every machine that can reach it: it shows peer IDs and job names (read-only)", addr)
}

// nextPorts is how many ports after a taken one ServeNext tries before it
// takes any free port: enough for the agents one machine runs, while the
// view stays on a port near the one the user knows.
const nextPorts = 100

// Serve listens on addr and serves the view until Close.
func Serve(addr string, d Deps) (*Server, error) {
	if _, err := ParseAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen(tcpNetwork(addr), addr)
	if err != nil {
		return nil, fmt.Errorf("%w: listen on %s: %w (is another agent's view there? pick another --web port, or --web off)", ErrAddr, addr, err)
	}
	return serve(ln, d), nil
}

// ServeNext is Serve, but when addr's port is taken (another agent of this
// machine serves its view there) it listens on the next free port after
// it, or on any free port when the next ones are all taken.
func ServeNext(addr string, d Deps) (*Server, error) {
	if _, err := ParseAddr(addr); err != nil {
		return nil, err
	}
	host, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	for i := 0; i <= nextPorts && port != 0 && port+i <= 65535; i++ {
		try := net.JoinHostPort(host, strconv.Itoa(port+i))
		ln, err := net.Listen(tcpNetwork(try), try)
		if err == nil {
			return serve(ln, d), nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("%w: listen on %s: %w", ErrAddr, try, err)
		}
	}
	return Serve(net.JoinHostPort(host, "0"), d)
}

// serve serves the view on ln until Close.
func serve(ln net.Listener, d Deps) *Server {
	s := &Server{
		srv: &http.Server{
			Handler:           Handler(d),
			ReadHeaderTimeout: 5 * time.Second,
			IdleTimeout:       time.Minute,
			MaxHeaderBytes:    maxHeaderBytes,
		},
		addr: ln.Addr(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Errorw("web view stopped", "err", err)
		}
	}()
	return s
}

// tcpNetwork keeps an IPv4 address IPv4 (Go would listen on [::] for
// 0.0.0.0, and say so).
func tcpNetwork(addr string) string {
	h, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(h); ip != nil && ip.To4() != nil {
		return "tcp4"
	}
	return "tcp"
}

// Addr is where the view listens (its port chosen when addr's was 0).
func (s *Server) Addr() net.Addr { return s.addr }

// URL is the view's address for a browser.
func (s *Server) URL() string { return "http://" + s.addr.String() + "/" }

// Close stops the view: event streams are cut at once (they would
// otherwise follow their job to its end).
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	<-s.done
	if err != nil {
		return fmt.Errorf("web: close: %w", err)
	}
	return nil
}

// graphCache keeps the last graph for graphTTL, so that many open pages
// do not make this agent ask its neighbours again and again.
type graphCache struct {
	mu  sync.Mutex // held while the graph is built: one build at a time
	at  time.Time
	val Graph
}

const graphTTL = 2 * time.Second

func (c *graphCache) get(ctx context.Context, d Deps) Graph {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < graphTTL {
		return c.val
	}
	mine := d.Self()
	theirs := askNeighbours(ctx, d, mine)
	c.val, c.at = BuildGraph(d.ID, mine, theirs), time.Now()
	return c.val
}
