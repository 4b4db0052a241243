package npb

import (
	"errors"
	"fmt"
	"strings"
)

// ErrClass is returned for a benchmark class a program does not know.
var ErrClass = errors.New("npb: unknown class")

// Class is an NPB problem class letter: S (small, for tests), W
// (workstation), then A, B, C... of growing size.
type Class byte

// String returns the class letter.
func (c Class) String() string { return string(rune(c)) }

// ParseClass reads a class letter (either case) and checks that it is one
// of known, given as a string of upper-case letters such as "SWAB".
func ParseClass(s, known string) (Class, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if len(u) != 1 || !strings.Contains(known, u) {
		return 0, fmt.Errorf("%w %q (want one of %s)", ErrClass, s, strings.Join(strings.Split(known, ""), ", "))
	}
	return Class(u[0]), nil
}
