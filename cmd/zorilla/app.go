package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
)

// newApp builds the command tree. It takes its writers so that tests run
// commands in-process and read what they print.
func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:      "zorilla",
		Usage:     "a fully decentralized peer-to-peer supercomputer",
		Version:   appVersion(),
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: []*cli.Command{
			agentCommand(), idCommand(), peersCommand(), statsCommand(),
			submitCommand(), statusCommand(), jobsCommand(), cancelCommand(), stopCommand(), resumeCommand(), demoCommand(), benchCommand(),
			testnetCommand(), trustCommand(), versionCommand(),
		},
		// A bad global flag or an unknown command is a usage error, exit 2.
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageErrorf("%v (see zorilla --help)", err)
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("unknown command %q (see zorilla --help)", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		// Errors are printed once, by run, with the exit code they carry.
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// run executes the command line and returns the process exit code: 0 on
// success, 2 for a usage error, or the code an error carries (a job's exit
// status for submit).
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

// runContext is run with a context that long commands (agent) end on, so
// tests run them in-process and stop them without a signal.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	args, err := flagsFirst(app.Commands, args)
	if err == nil {
		err = app.RunContext(ctx, args)
	}
	if err == nil {
		return 0
	}
	var coder cli.ExitCoder
	if errors.As(err, &coder) {
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(stderr, "zorilla:", msg)
		}
		return coder.ExitCode()
	}
	fmt.Fprintln(stderr, "zorilla:", err)
	return 1
}
