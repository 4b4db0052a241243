package main

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
)

// inspectProgram looks at the program before it is sent: a file that is
// neither an ELF binary nor a #! script cannot run anywhere, so it is
// refused here with the same answer every time (hosts would each say
// "exec format error"). A dynamically linked binary runs only where its
// loader and libraries are, which containers FROM scratch (zorilla
// testnet) lack: that is a warning, returned for the caller to print.
func inspectProgram(path string) (warning string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("program: %w", err)
	}
	defer f.Close()
	head := make([]byte, 4)
	if _, err := io.ReadFull(f, head); err != nil || (!bytes.Equal(head, []byte(elf.ELFMAG)) && !bytes.HasPrefix(head, []byte("#!"))) {
		return "", fmt.Errorf("program %s is neither a binary (ELF) nor a script starting with #!: no host can run it", path)
	}
	if !bytes.Equal(head, []byte(elf.ELFMAG)) {
		return "", nil
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return "", fmt.Errorf("program %s: not a valid ELF binary: %w", path, err)
	}
	defer ef.Close()
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Sprintf("warning: %s is dynamically linked: hosts without its loader and libraries "+
				"(containers FROM scratch, zorilla testnet) cannot run it; for Go, build with CGO_ENABLED=0", path), nil
		}
	}
	return "", nil
}
