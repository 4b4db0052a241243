package main

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionOf(t *testing.T) {
	libp2p := &debug.Module{Path: libp2pModule, Version: "v0.47.0"}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build info", nil,
			"zorilla devel\ncommit  unknown (built without VCS stamping: go run, -buildvcs=false, or outside a git clone)\ngo      unknown\nlibp2p  unknown\n"},
		{"-buildvcs=false", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Deps: []*debug.Module{libp2p}},
			"zorilla devel\ncommit  unknown (built without VCS stamping: go run, -buildvcs=false, or outside a git clone)\ngo      go1.26.8\nlibp2p  v0.47.0\n"},
		{"go build in a clone, stamped", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261207134721-6e57297801f4+dirty"},
			Deps:     []*debug.Module{libp2p},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "6e57297801f4f053a96269ededb8d86b6a6fb74b"}, {Key: "vcs.modified", Value: "true"}}},
			"zorilla v0.0.0-20261207134721-6e57297801f4+dirty\ncommit  6e57297801f4f053a96269ededb8d86b6a6fb74b (with uncommitted changes)\ngo      go1.26.8\nlibp2p  v0.47.0\n"},
		{"work tree, clean", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Deps:     []*debug.Module{{Path: "github.com/urfave/cli/v2", Version: "v2.27.7"}, libp2p},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "046e4da"}, {Key: "vcs.modified", Value: "false"}}},
			"zorilla devel\ncommit  046e4da\ngo      go1.26.8\nlibp2p  v0.47.0\n"},
		{"work tree, dirty", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Deps:     []*debug.Module{libp2p},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "046e4da"}, {Key: "vcs.modified", Value: "true"}}},
			"zorilla devel\ncommit  046e4da (with uncommitted changes)\ngo      go1.26.8\nlibp2p  v0.47.0\n"},
		{"go install of a tag, libp2p replaced", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.1"},
			Deps: []*debug.Module{{Path: libp2pModule, Version: "v0.47.0", Replace: &debug.Module{Path: "../go-libp2p"}}}},
			"zorilla v0.3.1\ncommit  unknown (built from the module's source at this version, not from a git clone)\ngo      go1.26.0\nlibp2p  v0.47.0 (replaced by ../go-libp2p)\n"},
	} {
		var b bytes.Buffer
		versionOf(tc.info).write(&b)
		if b.String() != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, b.String(), tc.want)
		}
	}
}

// TestVersionCommand runs zorilla --version and zorilla version: both
// print this binary's version, Go's and go-libp2p's.
func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"zorilla", "--version"}, {"zorilla", "version"}} {
		var out, errw bytes.Buffer
		if code := run(args, &out, &errw); code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errw.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 4 || !strings.HasPrefix(lines[0], "zorilla ") || !strings.HasPrefix(lines[1], "commit  ") ||
			lines[2] != "go      "+runtime.Version() || !strings.HasPrefix(lines[3], "libp2p  v") {
			t.Errorf("%v printed\n%s\nwant zorilla VERSION, commit, go %s and libp2p vX lines", args, out.String(), runtime.Version())
		}
	}
	var out, errw bytes.Buffer
	if code := run([]string{"zorilla", "version", "extra"}, &out, &errw); code != 2 || out.Len() != 0 {
		t.Errorf("zorilla version extra: exit %d, stdout %q; want exit 2 and nothing printed", code, out.String())
	}
}
