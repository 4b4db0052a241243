//go:build !linux

package localnet

import "syscall"

// ProcAttr leaves the children in the command's process group: where there
// is no parent-death signal, a terminal Ctrl-C reaching the children too
// is what keeps them from outliving the command.
func ProcAttr() *syscall.SysProcAttr { return nil }
