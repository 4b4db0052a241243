package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

// libp2pModule is the module whose version `zorilla version` reports.
const libp2pModule = "github.com/libp2p/go-libp2p"

// buildVersion is what `zorilla version` prints, read from the binary's
// build information.
type buildVersion struct {
	// Version is the module's: the tag or pseudo-version (with +dirty
	// for uncommitted changes) that go build and go install stamp from a
	// git clone, the version go install MODULE@VERSION fetched, or
	// "devel" when there is none (go run, -buildvcs=false).
	Version string
	Commit  string // VCS revision, "" when the build was not stamped
	Dirty   bool   // the work tree had uncommitted changes
	Go      string // the Go toolchain that built the binary
	Libp2p  string // go-libp2p's version (and its replacement), "" when not linked in
}

// versionOf reads a buildVersion from build information; info may be nil
// (a binary built without module support).
func versionOf(info *debug.BuildInfo) buildVersion {
	v := buildVersion{Version: "devel", Go: "unknown"}
	if info == nil {
		return v
	}
	v.Go = info.GoVersion
	if m := info.Main.Version; m != "" && m != "(devel)" {
		v.Version = m
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Dirty = s.Value == "true"
		}
	}
	for _, d := range info.Deps {
		if d.Path != libp2pModule {
			continue
		}
		v.Libp2p = d.Version
		if r := d.Replace; r != nil {
			v.Libp2p = strings.TrimSpace(fmt.Sprintf("%s (replaced by %s %s", d.Version, r.Path, r.Version)) + ")"
		}
	}
	return v
}

// write prints one "name value" line per item.
func (v buildVersion) write(w io.Writer) {
	fmt.Fprintf(w, "zorilla %s\n", v.Version)
	switch {
	case v.Commit == "" && v.Version != "devel":
		fmt.Fprintln(w, "commit  unknown (built from the module's source at this version, not from a git clone)")
	case v.Commit == "":
		fmt.Fprintln(w, "commit  unknown (built without VCS stamping: go run, -buildvcs=false, or outside a git clone)")
	case v.Dirty:
		fmt.Fprintf(w, "commit  %s (with uncommitted changes)\n", v.Commit)
	default:
		fmt.Fprintf(w, "commit  %s\n", v.Commit)
	}
	fmt.Fprintf(w, "go      %s\n", v.Go)
	libp2p := v.Libp2p
	if libp2p == "" {
		libp2p = "unknown"
	}
	fmt.Fprintf(w, "libp2p  %s\n", libp2p)
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:         "version",
		Usage:        "print the version, the commit it was built from, and the Go and go-libp2p versions",
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("version takes no arguments, got %q", c.Args().First())
			}
			printVersion(c)
			return nil
		},
	}
}

// printVersion writes this binary's version; it is also urfave/cli's
// VersionPrinter, for zorilla --version.
func printVersion(c *cli.Context) {
	info, _ := debug.ReadBuildInfo()
	versionOf(info).write(c.App.Writer)
}

// appVersion is the version the app's --version flag is shown with.
func appVersion() string {
	info, _ := debug.ReadBuildInfo()
	return versionOf(info).Version
}

func init() {
	// zorilla --version prints what zorilla version does; no -v, which
	// reads as "verbose".
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version (as zorilla version)", DisableDefaultText: true}
	cli.VersionPrinter = printVersion
}
