package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// programCommands run a program whose own arguments follow it: after the
// first positional argument (PROGRAM, or the demo's first argument)
// everything is the program's, as with mpirun, so their flags go before
// it.
var programCommands = []string{"submit", "demo"}

// flagsFirst moves the flags of the command a command line runs before
// that command's positional arguments, so that `status JOB --watch` reads
// as `status --watch JOB`: urfave/cli, like Go's flag package, stops at
// the first positional argument. A flag that takes a value brings the
// next argument along; "--" still ends the flags, and what follows it
// stays positional. Flags of a parent command (before the subcommand's
// name) stay where they are. An unknown flag is moved too, so the parser
// refuses it; a flag missing its value at the end is a usage error here,
// as the parser would take the first positional argument for its value.
// args[0] is the program's name.
func flagsFirst(cmds []*cli.Command, args []string) ([]string, error) {
	if len(args) < 2 {
		return args, nil
	}
	out := []string{args[0]}
	rest := args[1:]
	var cmd *cli.Command
	for {
		n := leadingFlags(cmd, rest)
		out, rest = append(out, rest[:n]...), rest[n:]
		if len(rest) == 0 || rest[0] == "--" {
			return append(out, rest...), nil
		}
		next := findCommand(cmds, rest[0])
		if next == nil {
			break // a positional argument of cmd (or an unknown command)
		}
		cmd, cmds = next, next.Subcommands
		out, rest = append(out, rest[0]), rest[1:]
		if len(rest) == 0 {
			return out, nil
		}
	}
	if cmd == nil {
		return append(out, rest...), nil
	}
	hoisted, err := hoist(cmd, rest)
	if err != nil {
		name := strings.Join(out[1:], " ")
		return nil, usageErrorf("%s: %v (see zorilla %s --help)", name, err, name)
	}
	return append(out, hoisted...), nil
}

// leadingFlags counts the arguments at the start of args that are flags of
// cmd (nil: the app's) and their values.
func leadingFlags(cmd *cli.Command, args []string) int {
	i := 0
	for i < len(args) && isFlag(args[i]) {
		if takesValue(cmd, args[i]) && !strings.Contains(args[i], "=") {
			i++
		}
		i++
	}
	return min(i, len(args))
}

// hoist reorders the arguments of cmd: its flags (with their values)
// first, then its positional arguments. With a help flag, only the flags
// stay: the parser would read the first argument as a help topic.
func hoist(cmd *cli.Command, args []string) ([]string, error) {
	var flags, pos []string
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" || (!isFlag(a) && slices.Contains(programCommands, cmd.Name)) {
			break
		}
		if !isFlag(a) {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		if !takesValue(cmd, a) || strings.Contains(a, "=") {
			continue
		}
		if i+1 == len(args) {
			if len(pos) == 0 {
				return flags, nil // the parser says it, as before any argument
			}
			return nil, fmt.Errorf("flag needs an argument: %s", a)
		}
		flags = append(flags, args[i+1])
		i++
	}
	if slices.ContainsFunc(flags, isHelp) {
		return flags, nil
	}
	if i < len(args) && args[i] == "--" {
		return append(append(append(flags, "--"), pos...), args[i+1:]...), nil
	}
	return append(append(flags, pos...), args[i:]...), nil
}

// isHelp reports whether a is the help flag.
func isHelp(a string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	return isFlag(a) && (name == "help" || name == "h")
}

// isFlag reports whether a is a flag: "-x" or "--x", not "-" or "--".
func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' && a != "--" }

// takesValue reports whether the flag a (with its dashes, maybe "=v") of
// cmd takes a value as the next argument. An unknown flag takes none.
func takesValue(cmd *cli.Command, a string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	if cmd == nil {
		return false
	}
	for _, f := range cmd.Flags {
		if !slices.Contains(f.Names(), name) {
			continue
		}
		if v, ok := f.(interface{ TakesValue() bool }); ok {
			return v.TakesValue()
		}
		return true
	}
	return false
}

// findCommand is the command of cmds named (or aliased) name.
func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}
