package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// The co-located ping-pong (bench pingpong --colocated): two ranks on one
// agent, which talk through shared memory, against NetPIPE between two
// processes of this machine over Open MPI's shared-memory transport
// (vader) and over MPICH (whose default channel uses shared memory on one
// host). Its rows' ratios divide the co-located zorilla figures.

// colocatedRuns are the co-located configurations: zorilla first (the
// others' base), then the NetPIPE ones that are installed; missing are
// series saying why the others are absent.
func colocatedRuns(z *zorillaTarget, dir string, lookPath func(string) (string, error)) (runs []*benchRun, missing []*series) {
	local := *z
	local.colocated = true
	base := &series{name: local.name()}
	base.base = base // its own base: no ratios
	runs = append(runs, &benchRun{target: &local, series: base})
	type mpi struct {
		label, mpirun, bin, alt, install string
		args                             []string
	}
	for _, m := range []mpi{
		{label: "NetPIPE vader", mpirun: "mpirun.openmpi", bin: "NPopenmpi", alt: "NPmpi",
			install: "apt-get install netpipe-openmpi openmpi-bin",
			args:    []string{"--oversubscribe", "--mca", "pml", "ob1", "--mca", "btl", "vader,self"}},
		{label: "NetPIPE MPICH", mpirun: "mpirun.mpich", bin: "NPmpich2", alt: "NPmpich",
			install: "apt-get install netpipe-mpich2 mpich"},
	} {
		mpirun, err1 := lookPath(m.mpirun)
		bin, err2 := lookPath(m.bin)
		if err2 != nil {
			bin, err2 = lookPath(m.alt)
		}
		if err1 != nil || err2 != nil {
			missing = append(missing, &series{name: m.label, base: base,
				note: fmt.Sprintf("not installed (%s, %s: %s)", m.mpirun, m.bin, m.install)})
			continue
		}
		runs = append(runs, &benchRun{optional: true, series: &series{name: m.label, base: base},
			target: &netpipeTarget{label: m.label, dir: dir, run: func(ctx context.Context, size int, out string) error {
				return npLocal(ctx, mpirun, bin, m.args, size, out)
			}}})
	}
	return runs, missing
}

// npLocal runs a NetPIPE MPI binary on two ranks of this machine.
func npLocal(ctx context.Context, mpirun, bin string, opts []string, size int, out string) error {
	args := append(append([]string{"-np", "2"}, opts...), bin)
	cmd := childCommand(ctx, mpirun, append(args, npArgs(size, out)...)...)
	cmd.Env = os.Environ()
	if os.Geteuid() == 0 {
		cmd.Env = append(cmd.Env, "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	}
	cmd.Dir = filepath.Dir(out)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(mpirun), filepath.Base(bin), err, lastLines(string(b), 10))
	}
	return nil
}
