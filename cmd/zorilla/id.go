package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func idCommand() *cli.Command {
	return &cli.Command{
		Name:         "id",
		Usage:        "print the local agent's peer ID and full addresses",
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
			return nil
		},
	}
}
