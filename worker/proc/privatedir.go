package proc

import (
	"fmt"
	"os"
	"syscall"
)

// CheckPrivateDir refuses a folder in a shared place that the agent must
// trust alone: a symbolic link, a folder of another user, or one others
// may write in. The agent's sandboxed jobs folder and its user ID locks
// live in such places (/var/tmp, /run).
func CheckPrivateDir(dir string) error {
	info, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st := info.Sys().(*syscall.Stat_t)
	switch {
	case !info.IsDir():
		return fmt.Errorf("%s is not a folder", dir)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to uid %d, not to the agent's user", dir, st.Uid)
	case info.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s may be written by others (mode %v)", dir, info.Mode().Perm())
	}
	return nil
}
