package node

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Bootstrap retries: the first a second after start-up, doubling to a
// minute while no bootstrap peer answers; once the agent has reached the
// network, a check a minute.
const (
	bootMinBackoff = time.Second
	bootMaxBackoff = time.Minute
	// bootMessageMax bounds the reason quoted in a report: libp2p's dial
	// errors list every address tried.
	bootMessageMax = 240
)

// WithReport makes the Node call report with one line whenever it starts
// or stops reaching the network through its bootstrap peers (a bootstrap
// peer cannot be reached, then can). The zorilla command prints these
// lines at any log level; without it they are logged as warnings. report
// is called from one goroutine at a time.
func WithReport(report func(msg string)) Option { return func(o *options) { o.report = report } }

// bootStep is the bootstrap watcher's decision after a check: the line to
// report, only when whether the agent reaches the network changed, and how
// long to wait before the next check (doubling from bootMinBackoff to
// bootMaxBackoff while it does not; bootMaxBackoff once it does).
func bootStep(wasReached, reached bool, delay time.Duration, why error) (msg string, next time.Duration) {
	switch {
	case reached && !wasReached:
		msg = "reached the network: a bootstrap peer answered"
	case !reached && wasReached:
		msg = fmt.Sprintf("no bootstrap peer can be reached (%s); retrying with backoff up to %v", oneLineReason(why), bootMaxBackoff)
	}
	if reached {
		return msg, bootMaxBackoff
	}
	return msg, min(max(2*delay, bootMinBackoff), bootMaxBackoff)
}

// oneLineReason is err's text on one line, cut to bootMessageMax bytes.
// Of a libp2p dial error it keeps what the last dial met.
func oneLineReason(err error) string {
	if err == nil {
		return "no answer"
	}
	s := strings.Join(strings.Fields(err.Error()), " ")
	const dials = "all dials failed"
	if i := strings.LastIndex(s, dials); i >= 0 {
		if rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s[i+len(dials):]), "*")); rest != "" {
			s = rest
		}
	}
	if len(s) > bootMessageMax {
		s = s[:bootMessageMax] + "…"
	}
	return s
}

// watchBootstrap retries the bootstrap peers with backoff while the agent
// knows no live peer, and reports each change between reaching the
// network and not (first is the result of the start-up attempt). It ends
// on Close.
func (n *Node) watchBootstrap(peers []peer.AddrInfo, first error, report func(string)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	n.OnClose(func() error { cancel(); <-done; return nil })
	go func() {
		defer close(done)
		reached := true // so that a failed start-up is reported
		msg, delay := bootStep(reached, first == nil, 0, first)
		reached = first == nil
		for {
			if msg != "" {
				report(msg)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			err := n.tryBootstrap(ctx, peers)
			if ctx.Err() != nil {
				return
			}
			msg, delay = bootStep(reached, err == nil, delay, err)
			reached = err == nil
		}
	}()
}

// tryBootstrap is nil when the agent reaches the network: it knows a live
// peer or is connected to a bootstrap peer, or a bootstrap peer answers
// now.
func (n *Node) tryBootstrap(ctx context.Context, peers []peer.AddrInfo) error {
	for _, p := range n.ov.Peers() {
		if !p.Dead {
			return nil
		}
	}
	for _, p := range peers {
		if n.h.Network().Connectedness(p.ID) == network.Connected {
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Overlay.PingTimeout+10*time.Second)
	defer cancel()
	return n.ov.Bootstrap(ctx, peers)
}
