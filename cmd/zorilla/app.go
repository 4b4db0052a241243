package main

import (
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
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: []*cli.Command{
			submitCommand(), statusCommand(), jobsCommand(), cancelCommand(), demoCommand(),
			testnetCommand(),
		},
		// Errors are printed once, by run, with the exit code they carry.
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// run executes the command line and returns the process exit code: 0 on
// success, 2 for a usage error, or the code an error carries (a job's exit
// status for submit).
func run(args []string, stdout, stderr io.Writer) int {
	err := newApp(stdout, stderr).Run(args)
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
