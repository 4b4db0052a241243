package node

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	ma "github.com/multiformats/go-multiaddr"
)

// ErrPortInUse is wrapped by New's error when another socket already holds
// a port the agent is to listen on.
var ErrPortInUse = errors.New("already in use")

// portProbe is one IP port a listen address binds.
type portProbe struct {
	network string // "tcp" or "udp"
	addr    string // host:port
}

// portProbes lists the TCP and UDP ports that listen addresses bind, so
// they can be checked before the host takes them. Port 0 (any free port)
// and addresses that bind no IP port (circuits, unix sockets) are left
// out.
func portProbes(listen []string) ([]portProbe, error) {
	var out []portProbe
	for _, s := range listen {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("listen address %q: %w", s, err)
		}
		ip, err := a.ValueForProtocol(ma.P_IP4)
		if err != nil {
			if ip, err = a.ValueForProtocol(ma.P_IP6); err != nil {
				continue
			}
		}
		for _, p := range []struct {
			code    int
			network string
		}{{ma.P_TCP, "tcp"}, {ma.P_UDP, "udp"}} {
			port, err := a.ValueForProtocol(p.code)
			if err != nil || port == "0" {
				continue
			}
			out = append(out, portProbe{p.network, net.JoinHostPort(ip, port)})
		}
	}
	return out, nil
}

// checkPortsFree fails with ErrPortInUse when another socket holds a port
// of the listen addresses. libp2p's TCP transport binds with SO_REUSEPORT,
// so a second agent on a port would start, share it, and get a share of
// the first one's connections; a plain bind (without SO_REUSEPORT), as
// here, fails on such a port. The port is released at once for the host
// to take.
func checkPortsFree(listen []string) error {
	probes, err := portProbes(listen)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	for _, p := range probes {
		if err := bindOnce(p); err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				_, port, _ := net.SplitHostPort(p.addr)
				return fmt.Errorf("node: listen on %s: %s port %s is %w by another listener (another agent?)",
					p.addr, p.network, port, ErrPortInUse)
			}
			// Other errors (an address of no interface here) are left to
			// the host, which reports them with the address.
		}
	}
	return nil
}

func bindOnce(p portProbe) error {
	if p.network == "udp" {
		c, err := net.ListenPacket("udp", p.addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	return ln.Close()
}
