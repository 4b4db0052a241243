package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
)

func idCommand() *cli.Command {
	return &cli.Command{
		Name:         "id",
		Usage:        "print the local agent's peer ID, its full addresses (lines starting with /), its network, how its public rendezvous goes and where its web view is",
		Flags:        jobClientFlags(),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("id takes no arguments, got %q", c.Args().First())
			}
			cl, err := jobClient(c)
			if err != nil {
				return err
			}
			defer cl.Close()
			info, err := cl.ID(c.Context)
			if err != nil {
				return agentError(err)
			}
			fmt.Fprintln(c.App.Writer, info.ID)
			for _, a := range info.Addrs {
				fmt.Fprintln(c.App.Writer, a)
			}
			if info.Network != "" {
				fmt.Fprintln(c.App.Writer, "network", info.Network)
			}
			if info.Reachability != "" {
				fmt.Fprintln(c.App.Writer, "reachability", info.Reachability)
			}
			if sb := info.Sandbox; sb != nil {
				fmt.Fprintln(c.App.Writer, "sandbox", sb)
			}
			if r := info.Rendezvous; r != nil {
				fmt.Fprintf(c.App.Writer, "rendezvous %d public DHT peers, %d agents found", r.PublicPeers, r.Found)
				if !r.Provided.IsZero() {
					fmt.Fprintf(c.App.Writer, ", announced %s", r.Provided.Local().Format(timeLayout))
				}
				if r.Error != "" {
					fmt.Fprintf(c.App.Writer, "; failing (%s), next try %s", r.Error, r.Retry.Local().Format(timeLayout))
				} else {
					fmt.Fprintf(c.App.Writer, ", %d lookups, next lookup %s", r.Lookups, nextLookup(r.NextLookup))
				}
				fmt.Fprintln(c.App.Writer)
			}
			web := info.Web
			if web == "" {
				web = "off"
			}
			fmt.Fprintln(c.App.Writer, "web", web)
			return nil
		},
	}
}

// nextLookup says when the rendezvous looks its key up next: zero is now.
func nextLookup(t time.Time) string {
	if t.IsZero() {
		return "now"
	}
	return t.Local().Format(timeLayout)
}
