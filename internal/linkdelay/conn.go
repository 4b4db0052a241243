package linkdelay

import (
	"context"
	"net/netip"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/transport"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/libp2p/go-libp2p/p2p/transport/tcpreuse"
	manet "github.com/multiformats/go-multiaddr/net"
)

// Conn is a raw connection whose writes go through a Line. Reads, and
// read deadlines, are the connection's own; write deadlines bound the
// wait for room in the line. It has no CloseWrite: libp2p closes TCP
// connections whole.
type Conn struct {
	manet.Conn
	line *Line
}

// NewConn delays what is written to c by delay. Close closes c.
func NewConn(c manet.Conn, delay time.Duration) *Conn {
	return &Conn{Conn: c, line: NewLine(c, delay, Limit)}
}

// Delay is how long what is written waits before it is sent.
func (c *Conn) Delay() time.Duration { return c.line.Delay() }

// Write puts b in the line; see Line.Write.
func (c *Conn) Write(b []byte) (int, error) { return c.line.Write(b) }

// Close sends what was written, then closes the connection.
func (c *Conn) Close() error { return c.line.Close() }

// SetDeadline sets the connection's read deadline and the line's write
// deadline.
func (c *Conn) SetDeadline(t time.Time) error {
	c.line.SetWriteDeadline(t)
	return c.Conn.SetReadDeadline(t)
}

// SetWriteDeadline bounds the wait for room in the line.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.line.SetWriteDeadline(t)
	return nil
}

// Upgrader wraps libp2p's upgrader u: each raw connection it upgrades,
// dialled or accepted, becomes a Conn with the table's delay for the
// connection's remote address, before the security handshake. A
// connection the table has no delay for is left as it is.
func Upgrader(u transport.Upgrader, t *Table) transport.Upgrader {
	return &upgrader{Upgrader: u, table: t}
}

type upgrader struct {
	transport.Upgrader
	table *Table
}

func (u *upgrader) wrap(c manet.Conn) manet.Conn {
	ip, err := manet.ToIP(c.RemoteMultiaddr())
	if err != nil {
		return c
	}
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return c
	}
	if d := u.table.DelayTo(a); d > 0 {
		return NewConn(c, d)
	}
	return c
}

func (u *upgrader) Upgrade(ctx context.Context, t transport.Transport, c manet.Conn, dir network.Direction, p peer.ID, scope network.ConnManagementScope) (transport.CapableConn, error) {
	return u.Upgrader.Upgrade(ctx, t, u.wrap(c), dir, p, scope)
}

func (u *upgrader) UpgradeListener(t transport.Transport, l manet.Listener) transport.Listener {
	return u.UpgradeGatedMaListener(t, u.GateMaListener(l))
}

func (u *upgrader) UpgradeGatedMaListener(t transport.Transport, l transport.GatedMaListener) transport.Listener {
	return u.Upgrader.UpgradeGatedMaListener(t, &gatedListener{GatedMaListener: l, u: u})
}

// gatedListener wraps the connections a listener accepts.
type gatedListener struct {
	transport.GatedMaListener
	u *upgrader
}

func (l *gatedListener) Accept() (manet.Conn, network.ConnManagementScope, error) {
	c, scope, err := l.GatedMaListener.Accept()
	if err != nil {
		return c, scope, err
	}
	return l.u.wrap(c), scope, nil
}

// TCPTransport is a constructor for libp2p.Transport: go-libp2p's TCP
// transport with its upgrader wrapped by Upgrader.
func TCPTransport(t *Table) func(transport.Upgrader, network.ResourceManager, *tcpreuse.ConnMgr) (*tcp.TcpTransport, error) {
	return func(u transport.Upgrader, rm network.ResourceManager, shared *tcpreuse.ConnMgr) (*tcp.TcpTransport, error) {
		return tcp.NewTCPTransport(Upgrader(u, t), rm, shared)
	}
}
