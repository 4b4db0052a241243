package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/node"
)

func statsCommand() *cli.Command {
	return &cli.Command{
		Name:         "stats",
		Usage:        "print what the local agent refused (rate limits, size caps, policy), by reason, and its advert counters",
		Flags:        jobClientFlags(),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("stats takes no arguments, got %q", c.Args().First())
			}
			cl, err := jobClient(c)
			if err != nil {
				return err
			}
			defer cl.Close()
			st, err := cl.Stats(c.Context)
			if err != nil {
				return agentError(err)
			}
			writeStats(c.App.Writer, st)
			return nil
		},
	}
}

// writeStats prints the advert counters on one line, the staging bytes on
// one line, then one line per refusal reason ("refused REASON COUNT"),
// sorted by reason.
func writeStats(w io.Writer, st node.StatsInfo) {
	a := st.Adverts
	fmt.Fprintf(w, "adverts received %d, delivered %d, forwarded %d, originated %d, dropped %d\n",
		a.Received, a.Delivered, a.Forwarded, a.Originated, a.TotalDropped())
	g := st.Staging
	fmt.Fprintf(w, "staging bytes served as submitter %d (whole files %d), as peer %d; fetched from submitters %d, from peers %d; corrupt chunks %d\n",
		g.ServedAsOwner+g.WholeServed, g.WholeServed, g.ServedAsPeer, g.FetchedOwner, g.FetchedPeers, g.CorruptChunks)
	for _, r := range node.RefusalReasons(st.Refused) {
		fmt.Fprintf(w, "refused %s %d\n", r, st.Refused[r])
	}
	if len(st.Refused) == 0 {
		fmt.Fprintln(w, "refused nothing")
	}
}
