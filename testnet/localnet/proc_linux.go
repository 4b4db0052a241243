package localnet

import "syscall"

// ProcAttr puts a child process (an agent, a bench helper) in its own
// process group, so that Ctrl-C in the terminal reaches only the command,
// which cancels its job and stops the children in order; and asks the
// kernel to send it SIGTERM if the command dies without stopping it
// (kill -9), so no child is left behind.
func ProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
