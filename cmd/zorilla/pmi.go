package main

import (
	"debug/elf"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/job"
)

func pmiFlag() cli.Flag {
	return &cli.BoolFlag{Name: "pmi", Usage: "the program is built with MPICH (mpicc.mpich): each agent serves its ranks PMI-1, and MPICH's own transports connect them (no -r 2)"}
}

// applyPMI sets d.PMI from --pmi.
func applyPMI(c *cli.Context, d *job.Description) {
	if c.IsSet("pmi") {
		d.PMI = c.Bool("pmi")
	}
}

// mpiOf names the MPI library an ELF binary is linked against ("MPICH",
// "Open MPI", or "" for none) and the library's file name.
func mpiOf(path string) (mpi, lib string) {
	ef, err := elf.Open(path)
	if err != nil {
		return "", ""
	}
	defer ef.Close()
	libs, _ := ef.ImportedLibraries()
	for _, l := range libs {
		switch {
		case strings.HasPrefix(l, "libmpich"):
			return "MPICH", l
		case strings.HasPrefix(l, "libmpi.so"), strings.HasPrefix(l, "libopen-rte"), strings.HasPrefix(l, "libopen-pal"):
			return "Open MPI", l
		}
	}
	return "", ""
}

// checkMPI refuses a program whose MPI cannot start under Zorilla as
// asked: Open MPI (which needs PMIx) at all, and MPICH without --pmi
// (each rank would run alone as a world of one).
func checkMPI(path string, pmi bool) error {
	mpi, lib := mpiOf(path)
	switch {
	case mpi == "Open MPI":
		return fmt.Errorf("%s is built with Open MPI (it needs %s): Open MPI's processes start only under a PMIx server, "+
			"which Zorilla does not provide; rebuild it with MPICH (mpicc.mpich) and submit with --pmi", filepath.Base(path), lib)
	case mpi == "MPICH" && !pmi:
		return fmt.Errorf("%s is built with MPICH (it needs %s): submit it with --pmi, "+
			"or each rank starts alone as a world of one", filepath.Base(path), lib)
	}
	return nil
}
