package proc

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"syscall"
)

// ErrProgram is wrapped by start errors that come from the program itself
// rather than from this host's state: the kernel will not run it here (a
// binary for another system, a dynamically linked binary whose loader is
// missing, a script whose interpreter is missing, a file that may not be
// executed). A submitter seeing it on more than one host stops trying.
var ErrProgram = errors.New("the program cannot run here")

// explainExec turns the kernel's refusal to exec program into words a user
// can act on, wrapping ErrProgram. Other errors are returned as they are.
func explainExec(program string, err error) error {
	var pe *fs.PathError
	var errno syscall.Errno
	if !errors.As(err, &pe) || !strings.Contains(pe.Op, "exec") || !errors.As(err, &errno) {
		return err
	}
	var why string
	switch errno {
	case syscall.ENOEXEC:
		why = fmt.Sprintf("exec format error: not a program for %s/%s (built for another system, or a script without a #! line)", runtime.GOOS, runtime.GOARCH)
	case syscall.EACCES:
		why = "permission denied: the file may not be executed here (not executable, or its folder is on a noexec file system)"
	case syscall.ENOENT:
		if _, serr := os.Stat(program); serr != nil {
			return err // the program itself is missing: the agent's fault, not the program's
		}
		why = missingInterpreter(program)
	default:
		return err
	}
	return &ProgramError{Why: why, err: err}
}

// ProgramError is a refusal to exec, explained: it matches both ErrProgram
// and the kernel's error.
type ProgramError struct {
	Why string // what the user can act on, e.g. "exec format error: ..."
	err error
}

func (e *ProgramError) Error() string   { return ErrProgram.Error() + ": " + e.Why }
func (e *ProgramError) Unwrap() []error { return []error{ErrProgram, e.err} }

// missingInterpreter says what the kernel could not find when a program
// that exists still gives ENOENT: the ELF loader of a dynamically linked
// binary, or the interpreter named by a script's #! line.
func missingInterpreter(program string) string {
	if f, err := elf.Open(program); err == nil {
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type != elf.PT_INTERP {
				continue
			}
			b := make([]byte, min(p.Filesz, 4096))
			if _, err := p.ReadAt(b, 0); err == nil {
				return fmt.Sprintf("it is dynamically linked and its loader %s is missing on this host; build it statically (CGO_ENABLED=0 for Go, -static for C)",
					string(bytes.TrimRight(b, "\x00")))
			}
		}
		return "the kernel could not find a file the program needs to start"
	}
	if f, err := os.Open(program); err == nil {
		defer f.Close()
		line, _ := bufio.NewReader(f).ReadString('\n')
		if rest, ok := strings.CutPrefix(line, "#!"); ok {
			if fields := strings.Fields(rest); len(fields) > 0 {
				return fmt.Sprintf("its interpreter %s (from its #! line) is missing on this host", fields[0])
			}
		}
	}
	return "the kernel could not find a file the program needs to start"
}
