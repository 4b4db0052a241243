package npb

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// Main runs a kernel as a command line program taking its class as the one
// argument: it connects to the agent (or runs as one rank without one),
// runs the kernel and returns the exit status: 0 when verified, 1 when the
// run failed or verification did not pass, 2 on a usage error.
func Main[P any](name string, args []string, stdout, stderr io.Writer,
	parse func(string) (P, error), run func(context.Context, Comm, P, io.Writer) (Results, error)) int {
	if len(args) != 1 {
		fmt.Fprintf(stderr, "usage: %s CLASS   (CLASS is S, W, A or B)\n", name)
		return 2
	}
	p, err := parse(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, done, err := Connect(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	res, err := run(ctx, c, p, stdout)
	if derr := done(err); err == nil {
		err = derr
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	if !res.Verified {
		return 1
	}
	return 0
}
