package job_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The lifecycle machine is pure: it reads no clock, starts no goroutine,
// owns no channel and does no I/O; every input carries its time and every
// outcome goes out as an effect. These are checked on its source, so that
// a change that slips one in fails here rather than in a flaky run.

// pureImports are the packages the machine may import.
var pureImports = map[string]bool{
	"errors": true, "fmt": true, "slices": true, "sort": true, "strings": true, "time": true, "bytes": true, "maps": true,
	"github.com/ipfs/go-log/v2":                       true, // its logger: what it logs changes nothing
	"github.com/libp2p/go-libp2p/core/peer":           true,
	"github.com/multiformats/go-multiaddr":            true,
	"github.com/zorilla-p2p/zorilla/flood":            true, // the flood's schedule (Growth), a pure value
	"github.com/zorilla-p2p/zorilla/job":              true,
	"github.com/zorilla-p2p/zorilla/job/proto":        true,
	"github.com/zorilla-p2p/zorilla/internal/gang":    true,
	"github.com/zorilla-p2p/zorilla/internal/silence": true,
}

// clockCalls are the functions of package time that read the clock or
// wait for it.
var clockCalls = map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true}

func TestMachineIsPure(t *testing.T) {
	for _, f := range parseDir(t, "lifecycle", false) {
		name := f.pos.Filename
		for _, im := range f.file.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); !pureImports[p] {
				t.Errorf("%s imports %s", name, p)
			}
		}
		ast.Inspect(f.file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: a goroutine", f.fset.Position(n.Pos()))
			case *ast.ChanType, *ast.SendStmt, *ast.SelectStmt:
				t.Errorf("%s: a channel", f.fset.Position(n.Pos()))
			case *ast.UnaryExpr:
				if n.Op == token.ARROW {
					t.Errorf("%s: a channel receive", f.fset.Position(n.Pos()))
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "time" && clockCalls[n.Sel.Name] {
					t.Errorf("%s: time.%s reads the clock", f.fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	}
}

// maxFuncLines bounds every function of the job packages and of the
// worker, the two sides of a job's life, tests included: a function
// longer than this does more than one thing.
const maxFuncLines = 80

func TestFunctionsAreShort(t *testing.T) {
	for _, dir := range []string{".", "lifecycle", "proto", "submitter", "../worker"} {
		for _, f := range parseDir(t, dir, true) {
			for _, d := range f.file.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				from, to := f.fset.Position(fn.Pos()), f.fset.Position(fn.End())
				if lines := to.Line - from.Line + 1; lines > maxFuncLines {
					t.Errorf("%s: %s is %d lines, more than %d", from, fn.Name.Name, lines, maxFuncLines)
				}
			}
		}
	}
}

type parsed struct {
	fset *token.FileSet
	file *ast.File
	pos  token.Position
}

// parseDir parses the Go files of dir (tests too, with tests).
func parseDir(t *testing.T, dir string, tests bool) []parsed {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []parsed
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || !tests && strings.HasSuffix(name, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		path := filepath.Join(dir, name)
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, parsed{fset: fset, file: f, pos: token.Position{Filename: path}})
	}
	return out
}
