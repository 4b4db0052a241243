package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
)

// dryRunDeadline bounds a dry run whose user set no deadline: a list-match
// that cannot be satisfied would otherwise wait job.DefaultDeadline (2 min)
// before listing what it found. 10 s floods to radius 3 with the default
// schedule (1 s, 2 s, 4 s), which reaches a few hundred agents.
const dryRunDeadline = 10 * time.Second

// exitInterrupted is the exit status of a job cancelled by the user or a
// command interrupted by Ctrl-C, as a shell reports a process ended by
// SIGINT (128+2).
const exitInterrupted = 130

func submitCommand() *cli.Command {
	return &cli.Command{
		Name:  "submit",
		Usage: "run a parallel job on the network, streaming its output tagged by rank",
		Description: "Uploads PROGRAM and the --input files to the local agent, which floods the job's advert,\n" +
			"places the n x r processes on the hosts that answer (closest first) and starts them.\n" +
			"Output lines come back as \"[rank] line\" (\"[rank.k]\" for copy k of a replicated rank);\n" +
			"the command exits with the job's status: the first failing rank's, 0 when done,\n" +
			"130 when cancelled. Ctrl-C cancels the job everywhere.",
		ArgsUsage:    "PROGRAM [ARGS...]   (or --file JOB.yaml)",
		Flags:        append(jobClientFlags(), submitFlags()...),
		OnUsageError: onUsageError,
		Action:       submitAction,
	}
}

func submitFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "n", Usage: "number of processes (MPI ranks), or `MIN:MAX` for a malleable job that starts with MIN and changes size at its checkpoints", Value: "1"},
		&cli.IntFlag{Name: "r", Usage: "copies of each rank, on distinct hosts", Value: 1},
		&cli.StringFlag{Name: "a", Aliases: []string{"strategy"}, Usage: "placement: spread (one per host first) or concentrate (fill the closest hosts)", Value: string(job.DefaultStrategy)},
		&cli.GenericFlag{Name: "input", Usage: "`FILE` staged beside the program on every host (repeatable)", Value: &listFlag{}},
		&cli.GenericFlag{Name: "output", Usage: "`FILE` or folder (or glob), in each rank's working folder, brought back when the job ends as FILE.<rank> (a folder as FOLDER.tar.<rank>; repeatable)", Value: &listFlag{}},
		outputDirFlag(),
		&cli.GenericFlag{Name: "env", Usage: "`K=V` added to every process's environment (repeatable)", Value: &listFlag{}},
		&cli.DurationFlag{Name: "timeout", Usage: "wall-clock limit of the run", Value: job.DefaultTimeout},
		&cli.DurationFlag{Name: "deadline", Usage: "give up looking for hosts after this long", Value: job.DefaultDeadline},
		&cli.DurationFlag{Name: "resize-every", Usage: "a malleable job (-n MIN:MAX) grows at most once per `D`", Value: job.DefaultResizeEvery},
		&cli.DurationFlag{Name: "checkpoint-every", Usage: "take a checkpoint (where the program calls Comm.Checkpoint) only when `D` has passed since the last one; by default at every call"},
		&cli.IntFlag{Name: "retries", Usage: "start the job again on other hosts at most `N` times when it loses a host while running (a rank's last copy)", Value: job.DefaultRetries},
		&cli.StringFlag{Name: "mem-per-proc", Usage: "`SIZE` of memory each process uses, e.g. 512M: hosts hold it for every process they take and co-schedule jobs only while it fits"},
		&cli.IntFlag{Name: "priority", Usage: "`N` from -100 to 100: a job of higher priority (as far as each host's owner honours it) may swap out or freeze lower ones", Value: proto.DefaultPriority},
		&cli.DurationFlag{Name: "swap-slice", Usage: "once the job has run `D` on hosts whose memory a job of equal priority waits for, that job may swap it out by checkpoint, and it waits its turn to swap back (the hybrid technique; each host's owner may cap D); 0: never swapped out for a job of equal priority, nor swapping one out", Value: job.DefaultSwapSlice},
		&cli.StringFlag{Name: "require", Usage: "what every host must have, e.g. os=linux,arch=amd64,cores=2,mem=2G,label=gpu"},
		&cli.StringFlag{Name: "file", Usage: "job description `FILE` (JSON or YAML); flags given as well override it"},
		&cli.BoolFlag{Name: "dry-run", Usage: "only flood and list the offers (latency-sorted) and whether the job is feasible"},
		&cli.BoolFlag{Name: "detach", Usage: "print the job ID and return at once"},
		pmiFlag(),
	}
}

func submitAction(c *cli.Context) error {
	d, err := descriptionFrom(c)
	if err != nil {
		return usageError(err)
	}
	if warn, _ := inspectProgram(d.Executable); warn != "" {
		fmt.Fprintln(c.App.ErrWriter, "zorilla:", warn)
	}
	outDir, err := outputDir(c)
	if err != nil {
		return err
	}
	dryRun := c.Bool("dry-run")
	if dryRun && !c.IsSet("deadline") && d.Deadline == job.DefaultDeadline {
		d.Deadline = dryRunDeadline
	}
	cl, err := jobClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, stop := notifyInterrupt(c.Context)
	defer stop()
	id, err := submitJob(ctx, cl, d, dryRun)
	if err != nil {
		return err
	}
	if c.Bool("detach") {
		fmt.Fprintln(c.App.Writer, id)
		return nil
	}
	rec, err := follow(ctx, stop, c, cl, id)
	if err != nil {
		return err
	}
	if dryRun {
		return writeDryRun(c.App.Writer, rec)
	}
	return finish(c, cl, rec, outDir)
}

// outputDirFlag is where submit and resume copy a job's output files.
func outputDirFlag() cli.Flag {
	return &cli.StringFlag{Name: "output-dir", Usage: "`DIR` the --output files are copied into when the job ends", Value: ".", DefaultText: "the current folder"}
}

// outputDir is --output-dir, refused when it names something that is not
// a folder.
func outputDir(c *cli.Context) (string, error) {
	dir := c.String("output-dir")
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return "", usageErrorf("--output-dir %s is not a folder", dir)
	}
	return dir, nil
}

// fetchOutputs copies the output files a job brought back into dir, and
// says where they went.
func fetchOutputs(ctx context.Context, cl *node.Client, id job.ID, dir string, stderr io.Writer) error {
	files, err := cl.Outputs(ctx, id)
	if err != nil {
		return fmt.Errorf("output files: %w", agentError(err))
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "zorilla: no output file came back")
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output files: %w", err)
	}
	names := make([]string, 0, len(files))
	for _, f := range files {
		if err := fetchOutput(ctx, cl, id, f.Name, filepath.Join(dir, f.Name)); err != nil {
			return err
		}
		names = append(names, f.Name)
	}
	abs, _ := filepath.Abs(dir)
	fmt.Fprintf(stderr, "zorilla: %d output files in %s: %s\n", len(names), abs, strings.Join(names, " "))
	return nil
}

func fetchOutput(ctx context.Context, cl *node.Client, id job.ID, name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("output file: %w", err)
	}
	if _, err := cl.Output(ctx, id, name, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// descriptionFrom builds the job description from --file and the flags the
// user set (a flag overrides the file), and validates it. Every error is a
// usage error naming the flag or field.
func descriptionFrom(c *cli.Context) (job.Description, error) {
	var d job.Description
	if f := c.String("file"); f != "" {
		if c.NArg() > 0 {
			return d, fmt.Errorf("give PROGRAM or --file, not both (got %q)", c.Args().First())
		}
		var err error
		if d, err = job.LoadDescription(f); err != nil {
			return d, err
		}
	} else {
		if c.NArg() == 0 {
			return d, errors.New("PROGRAM is required (or --file JOB.yaml)")
		}
		d = job.NewDescription(c.Args().First(), c.Args().Tail(), 1)
	}
	if err := applyFlags(c, &d); err != nil {
		return d, err
	}
	if err := d.Validate(); err != nil {
		return d, err
	}
	return d, checkLocalFiles(d)
}

// applyFlags sets the fields whose flags were given on the command line.
func applyFlags(c *cli.Context, d *job.Description) error {
	if c.IsSet("n") || c.String("file") == "" {
		lo, hi, err := job.ParseProcs(c.String("n"))
		if err != nil {
			return fmt.Errorf("-n: %w", err)
		}
		d.MinNodes, d.Nodes = lo, hi
	}
	if c.IsSet("resize-every") || d.Malleable() && d.ResizeEvery == 0 {
		d.ResizeEvery = c.Duration("resize-every")
	}
	if c.IsSet("r") {
		d.Replicas = c.Int("r")
	}
	applyPMI(c, d)
	if c.IsSet("a") {
		s, err := job.ParseStrategy(c.String("a"))
		if err != nil {
			return fmt.Errorf("-a: %w", err)
		}
		d.Strategy = s
	}
	if c.IsSet("input") {
		d.Inputs = listOf(c, "input")
	}
	if c.IsSet("output") {
		d.Outputs = listOf(c, "output")
	}
	if c.IsSet("timeout") {
		d.Timeout = c.Duration("timeout")
	}
	if c.IsSet("deadline") {
		d.Deadline = c.Duration("deadline")
	}
	if c.IsSet("retries") {
		d.Retries = c.Int("retries")
	}
	if c.IsSet("checkpoint-every") {
		d.CheckpointEvery = c.Duration("checkpoint-every")
	}
	if c.IsSet("priority") {
		d.Priority = c.Int("priority")
	}
	if c.IsSet("swap-slice") {
		d.SwapSlice = c.Duration("swap-slice")
	}
	if c.IsSet("mem-per-proc") {
		m, err := proto.ParseSize(c.String("mem-per-proc"))
		if err != nil {
			return fmt.Errorf("--mem-per-proc: %w", err)
		}
		d.MemPerProc = m
	}
	if c.IsSet("require") {
		req, err := job.ParseRequire(c.String("require"))
		if err != nil {
			return err
		}
		d.Require = req
	}
	return applyEnv(c, d)
}

func applyEnv(c *cli.Context, d *job.Description) error {
	if !c.IsSet("env") {
		return nil
	}
	if d.Env == nil {
		d.Env = map[string]string{}
	}
	for _, kv := range listOf(c, "env") {
		k, v, err := job.ParseEnv(kv)
		if err != nil {
			return fmt.Errorf("--env: %w", err)
		}
		d.Env[k] = v
	}
	return nil
}

// checkLocalFiles refuses a program or input that is not a readable
// regular file before anything is uploaded.
func checkLocalFiles(d job.Description) error {
	check := func(what, p string) error {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s: %s is not a regular file", what, p)
		}
		return nil
	}
	if err := check("program", d.Executable); err != nil {
		return err
	}
	if _, err := inspectProgram(d.Executable); err != nil {
		return err
	}
	if err := checkMPI(d.Executable, d.PMI); err != nil {
		return err
	}
	for _, in := range d.Inputs {
		if err := check("input", in); err != nil {
			return err
		}
	}
	return nil
}

// submitJob uploads the program and inputs to the agent and submits the
// job. An interrupt before the job exists just stops the command.
func submitJob(ctx context.Context, cl *node.Client, d job.Description, dryRun bool) (job.ID, error) {
	id, err := cl.SubmitFiles(ctx, d, dryRun)
	if err != nil {
		return "", interruptedOr(ctx, err)
	}
	return id, nil
}

// interruptedOr reports an interrupt as such rather than as the error it
// caused.
func interruptedOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return cli.Exit("interrupted", exitInterrupted)
	}
	return agentError(err)
}

// jobExit turns a job's end into the command's exit: 0 when done, the
// first failing rank's status when failed (1 if no rank failed, e.g. no
// hosts were found), 130 when cancelled. The printer has already shown the
// end and its reason, so the exit carries no message.
func jobExit(rec job.Record) error {
	if code, ok := exitStatus(rec); ok {
		if code == 0 {
			return nil
		}
		return cli.Exit("", code)
	}
	if rec.State == job.Running {
		// The agent stopped while the job ran; it takes the job back when it
		// starts again (zorilla status tells how it ended).
		return cli.Exit(fmt.Sprintf("zorilla: the agent stopped while job %s ran; once it is back, see zorilla status %s", rec.ID, rec.ID), 1)
	}
	return cli.Exit("", 1)
}

// exitStatus is the status submit exits with for a job that ended, and
// what status and jobs show: 0 when done, the first failing rank's status
// when failed (1 if no rank failed), 130 when cancelled. ok is false while
// the job has not ended.
func exitStatus(rec job.Record) (code int, ok bool) {
	switch rec.State {
	case job.Done:
		return 0, true
	case job.Cancelled, job.Stopped:
		return exitInterrupted, true
	case job.Failed:
		if rec.Exit == 0 {
			return 1, true
		}
		return rec.Exit, true
	}
	return 0, false
}

// exitText is a job's exit status as status and jobs show it: the code
// submit exits with, "130 (cancelled)", or "-" while it has not ended.
func exitText(rec job.Record) string {
	code, ok := exitStatus(rec)
	switch {
	case !ok:
		return "-"
	case rec.State == job.Cancelled:
		return fmt.Sprintf("%d (cancelled)", code)
	case rec.State == job.Stopped:
		return fmt.Sprintf("%d (stopped; zorilla resume %s)", code, rec.ID)
	}
	return fmt.Sprint(code)
}

// listFlag is a repeatable string flag whose values are kept whole (the
// slice flags of urfave/cli split at commas, which --env A=x,y must not).
type listFlag struct{ values []string }

func (l *listFlag) Set(s string) error { l.values = append(l.values, s); return nil }
func (l *listFlag) String() string     { return strings.Join(l.values, " ") }

func listOf(c *cli.Context, name string) []string {
	if l, ok := c.Generic(name).(*listFlag); ok {
		return append([]string(nil), l.values...)
	}
	return nil
}
