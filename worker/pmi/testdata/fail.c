/* fail MODE RANK: rank RANK calls MPI_Abort(7) (MODE abort) or exits 3
   (MODE exit) once every rank is through MPI_Init; the others wait in a
   barrier. The first barrier matters: MPICH over UCX may still be setting
   up shared memory with a rank after that rank's MPI_Init returned, and a
   rank that exits then makes the others fail in their MPI_Init first. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 2 && rank == atoi(argv[2])) {
        if (strcmp(argv[1], "abort") == 0) {
            fprintf(stderr, "rank %d aborts\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 7);
        }
        fprintf(stderr, "rank %d exits 3\n", rank);
        exit(3);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
