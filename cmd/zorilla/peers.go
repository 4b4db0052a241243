package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/node"
)

func peersCommand() *cli.Command {
	return &cli.Command{
		Name:         "peers",
		Usage:        "print the local agent's neighbours with their RTT, and how many peers it knows",
		Flags:        jobClientFlags(),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("peers takes no arguments, got %q", c.Args().First())
			}
			cl, err := jobClient(c)
			if err != nil {
				return err
			}
			defer cl.Close()
			info, err := cl.Peers(c.Context)
			if err != nil {
				return agentError(err)
			}
			writePeers(c.App.Writer, info)
			return nil
		},
	}
}

// writePeers prints one neighbour per line (peer ID, RTT, why it is a
// neighbour, whether the connection is direct or through a relay), then
// the count of known peers.
func writePeers(w io.Writer, info node.PeersInfo) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PEER\tRTT\tLINK\tCONN")
	for _, p := range info.Neighbours {
		rtt := "-"
		if p.Measured {
			rtt = p.RTT.Round(10 * time.Microsecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ID, rtt, linkKind(p.Near, p.LongRange, p.Inbound), p.Conn)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d neighbours, %d peers known", len(info.Neighbours), info.Known)
	if info.Dead > 0 {
		fmt.Fprintf(w, ", %d marked dead", info.Dead)
	}
	fmt.Fprintln(w)
}

func linkKind(near, longRange, inbound bool) string {
	switch {
	case near:
		return "near"
	case longRange:
		return "long-range"
	case inbound:
		return "inbound"
	}
	return "-"
}
