package main

import (
	"fmt"
	"io"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/node"
)

func trustCommand() *cli.Command {
	edit := func(op string) *cli.Command {
		verb := map[string]string{"add": "allow a submitter (or, with --deny, never accept it)",
			"remove": "take a submitter off the allow list (or, with --deny, off the deny list)"}[op]
		return &cli.Command{
			Name:         op,
			Usage:        verb,
			ArgsUsage:    "PEER-ID [--deny]",
			Flags:        append(jobClientFlags(), &cli.BoolFlag{Name: "deny", Usage: "edit the deny list instead"}),
			OnUsageError: onUsageError,
			Action:       func(c *cli.Context) error { return runTrustEdit(c, op) },
		}
	}
	return &cli.Command{
		Name:  "trust",
		Usage: "list or edit whom the local agent runs jobs for (its allow and deny lists)",
		Description: "An agent runs jobs only for itself and the submitters in its allow list, unless it was started\n" +
			"with --open; the deny list always wins. Edits are written to the agent's list files and are in\n" +
			"force at once; `trust reload` (or SIGHUP to the agent) reads files edited by hand.",
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "print the allow and deny lists", Flags: jobClientFlags(), OnUsageError: onUsageError,
				Action: func(c *cli.Context) error { return runTrust(c, "list") }},
			edit("add"), edit("remove"),
			{Name: "reload", Usage: "make the agent read its allow and deny files again", Flags: jobClientFlags(),
				OnUsageError: onUsageError, Action: func(c *cli.Context) error { return runTrust(c, "reload") }},
		},
	}
}

// runTrust lists or reloads the lists.
func runTrust(c *cli.Context, what string) error {
	if c.NArg() > 0 {
		return usageErrorf("trust %s takes no arguments, got %q", what, c.Args().First())
	}
	cl, err := jobClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	var info node.TrustInfo
	if what == "reload" {
		info, err = cl.ReloadTrust(c.Context)
	} else {
		info, err = cl.Trust(c.Context)
	}
	if err != nil {
		return agentError(err)
	}
	writeTrust(c.App.Writer, info)
	return nil
}

func runTrustEdit(c *cli.Context, op string) error {
	args := c.Args().Slice()
	if len(args) != 1 {
		return usageErrorf("trust %s takes one peer ID, got %d arguments", op, len(args))
	}
	id, err := peer.Decode(args[0])
	if err != nil {
		return usageErrorf("trust %s: %q is not a peer ID (see `zorilla id` on the submitter's machine)", op, args[0])
	}
	list := node.ListAllow
	if c.Bool("deny") {
		list = node.ListDeny
	}
	cl, err := jobClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	info, err := cl.EditTrust(c.Context, node.TrustEdit{Op: op, List: list, Peer: id})
	if err != nil {
		return agentError(err)
	}
	writeTrust(c.App.Writer, info)
	return nil
}

// writeTrust prints whom the agent accepts, then one peer per line.
func writeTrust(w io.Writer, info node.TrustInfo) {
	fmt.Fprintf(w, "accepting jobs from %s\n", trustSummary(info))
	for _, id := range info.Allow {
		fmt.Fprintf(w, "allow  %s\n", id)
	}
	for _, id := range info.Deny {
		fmt.Fprintf(w, "deny   %s\n", id)
	}
}

// trustSummary says in words whom an agent runs jobs for.
func trustSummary(info node.TrustInfo) string {
	who := fmt.Sprintf("this agent and %s", plural(len(info.Allow), "allowed submitter"))
	if info.Open {
		who = "every submitter (--open)"
	}
	if len(info.Deny) > 0 {
		who += fmt.Sprintf(" except %s", plural(len(info.Deny), "denied one"))
	}
	if info.AllowFile != "" {
		who += fmt.Sprintf(" (lists: %s, %s)", info.AllowFile, info.DenyFile)
	}
	return who
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
