package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
)

// apiTimeout bounds one request/answer with the local agent; only watching
// a job's output waits longer.
const apiTimeout = 30 * time.Second

// timeLayout is how job commands print a time of day, to the millisecond:
// a job's states often change within one second.
const timeLayout = "2006-01-02 15:04:05.000"

func jobsCommand() *cli.Command {
	return &cli.Command{
		Name:         "jobs",
		Usage:        "list the jobs submitted through the local agent",
		ArgsUsage:    " ",
		Flags:        jobClientFlags(),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("jobs takes no arguments, got %q", c.Args().First())
			}
			return listJobs(c)
		},
	}
}

// listJobs prints the table of jobs (zorilla jobs, and status without JOB).
func listJobs(c *cli.Context) error {
	cl, err := jobClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.Context, apiTimeout)
	defer cancel()
	recs, err := cl.Jobs(ctx)
	if err != nil {
		return agentError(err)
	}
	writeJobs(c.App.Writer, recs)
	return nil
}

// writeJobs prints one line per job, oldest first as the agent lists them:
// ID, state, n x r, when it was created, its exit status and program.
func writeJobs(w io.Writer, recs []job.Record) {
	if len(recs) == 0 {
		fmt.Fprintln(w, "no jobs")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tN x R\tCREATED\tEXIT\tPROGRAM")
	for _, r := range recs {
		exit := exitText(r)
		state := string(r.State)
		if r.DryRun {
			state += " (dry run)"
		}
		n := strconv.Itoa(r.Desc.Nodes)
		if r.Desc.Malleable() {
			n = fmt.Sprintf("%d of %s", r.WorldSize(), r.Desc.FormatProcs())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s x %d\t%s\t%s\t%s\n", r.ID, state, n, r.Desc.Replicas,
			r.Created.Local().Format(time.DateTime), exit, programName(r.Desc))
	}
	tw.Flush()
}

// programName is the program's base name and its arguments, cut short.
func programName(d job.Description) string {
	s := strings.Join(append([]string{filepath.Base(d.Executable)}, d.Args...), " ")
	if len(s) > 40 {
		s = s[:39] + "…"
	}
	return s
}

// shortPeer abbreviates a peer ID as libp2p does (12*abcdef), the form the
// examples print for the agent they run on.
func shortPeer(id peer.ID) string {
	s := id.String()
	if len(s) <= 10 {
		return s
	}
	return s[:2] + "*" + s[len(s)-6:]
}

// --- client helpers shared by submit, status, jobs, cancel and demo ---

// jobClientFlags are the flags every job command takes to find its agent.
func jobClientFlags() []cli.Flag {
	return []cli.Flag{&cli.StringFlag{
		Name:    "data-dir",
		Usage:   "data dir of the local agent, whose socket the command talks to",
		EnvVars: []string{"ZORILLA_DATA_DIR"},
		Value:   defaultDataDir(),
	}}
}

// jobClient dials the agent of --data-dir; a missing agent is one line.
func jobClient(c *cli.Context) (*node.Client, error) {
	dir := c.String("data-dir")
	if dir == "" {
		return nil, usageErrorf("--data-dir is empty")
	}
	cl, err := node.Dial(expandHome(dir))
	if err != nil {
		return nil, agentError(err)
	}
	return cl, nil
}

// agentError turns a failed API call into the command's error (exit 1),
// with a hint when the agent is not running.
func agentError(err error) error {
	var coder cli.ExitCoder
	if errors.As(err, &coder) {
		return err
	}
	if errors.Is(err, node.ErrNotRunning) {
		return cli.Exit(err.Error()+"; start one with `zorilla agent`", 1)
	}
	return cli.Exit(err.Error(), 1)
}

// clientForJob dials the command's agent and finds the job its one
// argument names (findJob); the caller closes the client.
func clientForJob(c *cli.Context) (*node.Client, job.Record, error) {
	cl, err := jobClient(c)
	if err != nil {
		return nil, job.Record{}, err
	}
	ctx, cancel := context.WithTimeout(c.Context, apiTimeout)
	defer cancel()
	rec, err := findJob(ctx, cl, c.Args().First())
	if err != nil {
		cl.Close()
		return nil, job.Record{}, agentError(err)
	}
	return cl, rec, nil
}

// findJob returns the record of the job named by arg: a whole job ID or
// the unique prefix of one.
func findJob(ctx context.Context, cl *node.Client, arg string) (job.Record, error) {
	id, err := proto.ParseJobID(arg)
	if err != nil {
		return job.Record{}, usageError(err)
	}
	rec, err := cl.Job(ctx, id)
	var apiErr *node.APIError
	if err == nil || !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		return rec, err
	}
	recs, lerr := cl.Jobs(ctx)
	if lerr != nil {
		return job.Record{}, err
	}
	var found []job.Record
	for _, r := range recs {
		if strings.HasPrefix(string(r.ID), arg) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return job.Record{}, cli.Exit(fmt.Sprintf("no job %s on this agent", arg), 1)
	case 1:
		return found[0], nil
	}
	return job.Record{}, cli.Exit(fmt.Sprintf("%q names %d jobs; give more of the ID", arg, len(found)), 1)
}

// usageError is a bad command line: exit status 2.
func usageError(err error) error { return cli.Exit(err.Error(), 2) }

func usageErrorf(format string, args ...any) error {
	return usageError(fmt.Errorf(format, args...))
}

// onUsageError makes urfave/cli's flag errors exit 2 like ours.
func onUsageError(c *cli.Context, err error, _ bool) error {
	return usageErrorf("%s: %v (see zorilla %s --help)", c.Command.Name, err, c.Command.Name)
}

// defaultDataDir is ~/.zorilla, the agent's default data dir.
func defaultDataDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ".zorilla"
	}
	return filepath.Join(home, ".zorilla")
}

// expandHome reads a leading ~/ as the home folder, as a shell would.
func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}
