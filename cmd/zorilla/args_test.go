package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestFlagsFirst(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"status JOB --watch", "status --watch JOB"},
		{"status --data-dir D JOB --watch", "status --data-dir D --watch JOB"},
		{"stop JOB --checkpoint --timeout 1m", "stop --checkpoint --timeout 1m JOB"},
		{"stop JOB --timeout=1m --checkpoint", "stop --timeout=1m --checkpoint JOB"},
		{"resume JOB --elsewhere --data-dir D", "resume --elsewhere --data-dir D JOB"},
		{"cancel JOB --data-dir D", "cancel --data-dir D JOB"},
		{"trust add ID --deny", "trust add --deny ID"},
		{"testnet kill S-0 --name n S-1", "testnet kill --name n S-0 S-1"},
		{"bench pingpong --rounds 2", "bench pingpong --rounds 2"},
		// A value that looks like a flag goes with its flag.
		{"stop JOB --timeout -1s", "stop --timeout -1s JOB"},
		// An unknown flag is moved, for the parser to refuse; it takes no value.
		{"status JOB --bogus X", "status --bogus JOB X"},
		// A value missing at the end, with no argument before, is the parser's to report.
		{"stop --checkpoint --timeout", "stop --checkpoint --timeout"},
		// "--" ends the flags: what follows stays an argument.
		{"cancel JOB -- --odd", "cancel -- JOB --odd"},
		{"cancel -- --odd", "cancel -- --odd"},
		// After PROGRAM, everything is the program's.
		{"submit -n 4 ./prog -n 2 --x", "submit -n 4 ./prog -n 2 --x"},
		{"submit ./prog --data-dir D", "submit ./prog --data-dir D"},
		{"demo --agents 3 7 --n 2", "demo --agents 3 7 --n 2"},
		// Help shows the command's help, whatever the arguments.
		{"status JOB --help", "status --help"},
		{"trust add ID -h --deny", "trust add -h --deny"},
		// What is not a command is left alone.
		{"help status --x", "help status --x"},
		{"bogus A --x", "bogus A --x"},
		{"--version", "--version"},
		{"", ""},
	} {
		in := append([]string{"zorilla"}, strings.Fields(tc.in)...)
		out, err := flagsFirst(newApp(io.Discard, io.Discard).Commands, in)
		if got := strings.Join(out[min(1, len(out)):], " "); err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestEveryFlagAfterArguments gives every flag of every command after a
// positional argument, and checks that the command sees the flag with its
// value and the argument as its own (for submit and demo: that the flag
// stays the program's). Each command's action is replaced by one that
// records what it was given.
func TestEveryFlagAfterArguments(t *testing.T) {
	t.Setenv("ZORILLA_WEB", "") // TestMain's; the flags are read from the command line only
	app := newApp(io.Discard, io.Discard)
	var seen *cli.Context
	leaves := leafCommands(app.Commands, nil)
	for _, l := range leaves {
		l.cmd.Action = func(c *cli.Context) error { seen = c; return nil }
	}
	checked := 0
	for _, l := range leaves {
		required := requiredArgs(l.cmd)
		for _, f := range l.cmd.Flags {
			name := f.Names()[0]
			flagArgs, want := flagSample(f)
			args := append(append([]string{"zorilla"}, l.path...), "ARG")
			args = append(append(args, flagArgs...), required...)
			seen = nil
			hoisted, err := flagsFirst(app.Commands, args)
			if err == nil {
				err = app.Run(hoisted)
			}
			if err != nil || seen == nil {
				t.Errorf("%s: %v (action ran: %v)", strings.Join(args[1:], " "), err, seen != nil)
				continue
			}
			got := seen.Args().Slice()
			if slices.Contains(programCommands, l.cmd.Name) {
				if wantArgs := append([]string{"ARG"}, flagArgs...); !slices.Equal(got, wantArgs) {
					t.Errorf("%s: the program's arguments are %q, want %q", strings.Join(args[1:], " "), got, wantArgs)
				}
				checked++
				continue
			}
			value := fmt.Sprint(seen.Value(name))
			if _, ok := f.(*cli.StringSliceFlag); ok {
				value = fmt.Sprint(seen.StringSlice(name))
			}
			if !slices.Equal(got, []string{"ARG"}) || !seen.IsSet(name) || value != want {
				t.Errorf("%s: arguments %q, --%s set %v to %q; want [ARG] and %q", strings.Join(args[1:], " "),
					got, name, seen.IsSet(name), value, want)
			}
			checked++
		}
	}
	if len(leaves) < 25 || checked < 130 {
		t.Errorf("checked %d flags of %d commands: the walk missed some", checked, len(leaves))
	}
}

// leaf is a command without subcommands and the words that run it.
type leaf struct {
	path []string
	cmd  *cli.Command
}

func leafCommands(cmds []*cli.Command, parent []string) []leaf {
	var out []leaf
	for _, c := range cmds {
		path := append(slices.Clone(parent), c.Name)
		if len(c.Subcommands) > 0 {
			out = append(out, leafCommands(c.Subcommands, path)...)
			continue
		}
		out = append(out, leaf{path, c})
	}
	return out
}

// flagSample is a flag as given on a command line with a value of its
// type, and that value as the command reads it.
func flagSample(f cli.Flag) (args []string, value string) {
	name := "--" + f.Names()[0]
	switch f.(type) {
	case *cli.BoolFlag:
		return []string{name}, "true"
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
		return []string{name, "3"}, "3"
	case *cli.DurationFlag:
		return []string{name, "90s"}, "1m30s"
	case *cli.Float64Flag:
		return []string{name, "1.5"}, "1.5"
	case *cli.StringSliceFlag:
		return []string{name, "v"}, "[v]"
	}
	return []string{name, "v"}, "v"
}

// requiredArgs are the command's required flags with a value each.
func requiredArgs(c *cli.Command) []string {
	var out []string
	for _, f := range c.Flags {
		if r, ok := f.(cli.RequiredFlag); ok && r.IsRequired() {
			args, _ := flagSample(f)
			out = append(out, args...)
		}
	}
	return out
}

// A bad flag after the arguments is still a usage error: one line, exit 2.
func TestBadFlagAfterArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "JOB", "--bogus"}, "status: flag provided but not defined: -bogus"},
		{[]string{"stop", "JOB", "--checkpoint", "--timeout"}, "stop: flag needs an argument: --timeout (see zorilla stop --help)"},
		{[]string{"trust", "add", "ID", "--data-dir"}, "trust add: flag needs an argument: --data-dir"},
		{[]string{"stop", "--checkpoint", "--timeout"}, "stop: flag needs an argument: -timeout"},
		{[]string{"stop", "JOB", "--timeout", "soon"}, `stop: invalid value "soon" for flag -timeout`},
		{[]string{"trust", "add", "ID", "--deny=maybe"}, `add: invalid boolean value "maybe" for -deny`},
		{[]string{"cancel", "JOB", "OTHER", "--data-dir", "/nonexistent"}, "cancel takes one JOB, got 2 arguments"},
	} {
		r := zorilla(tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: want exit 2 and one line containing %q, got %v", tc.args, tc.want, r)
		}
	}
}
