/* ring: the token ring of examples/ring, in C for MPICH. Rank 0 starts a
   token at 0, every rank adds its own rank number and passes it on, for LAPS
   laps (default 100); rank 0 checks the token is LAPS x (0+1+...+(size-1))
   and prints it with the time one lap took.

     mpicc.mpich -O2 -o ring examples/mpich/ring.c
     zorilla submit --pmi -n 8 -a concentrate ./ring 1000

   It exits 2 on a usage error, 1 when the token is wrong. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long laps = 100;
    if (argc > 2 || (argc == 2 && (laps = strtol(argv[1], NULL, 10)) < 1)) {
        if (rank == 0) {
            fprintf(stderr, "usage: ring [LAPS]\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    long token = 0;
    double start = MPI_Wtime();
    for (long lap = 0; lap < laps; lap++) {
        if (rank != 0) {
            MPI_Recv(&token, 1, MPI_LONG, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        token += rank;
        MPI_Send(&token, 1, MPI_LONG, next, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Recv(&token, 1, MPI_LONG, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }

    int status = 0;
    if (rank == 0) {
        long want = laps * (long)size * (size - 1) / 2;
        double per = (MPI_Wtime() - start) / laps;
        printf("ring: %d ranks, %ld laps, token %ld, %.1f us per lap\n", size, laps, token, per * 1e6);
        if (token != want) {
            fprintf(stderr, "ring: token %ld after %ld laps, want %ld\n", token, laps, want);
            status = 1;
        }
    }
    MPI_Finalize();
    return status;
}
