/* coll: Allreduce and Alltoallv on values every rank can also compute
   serially; each rank checks what it received and prints "coll ok" or
   exits 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int val(int from, int to, int i) { return from * 1000 + to * 10 + i; }

int main(int argc, char **argv) {
    int rank, size, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Allreduce of a vector: element i is sum over ranks of (rank+1)*(i+1). */
    enum { LEN = 1000 };
    long in[LEN], out[LEN];
    for (int i = 0; i < LEN; i++) in[i] = (long)(rank + 1) * (i + 1);
    MPI_Allreduce(in, out, LEN, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    long ranks = (long)size * (size + 1) / 2;
    for (int i = 0; i < LEN; i++) if (out[i] != ranks * (i + 1)) bad++;

    /* Alltoallv: rank r sends (d % 3) + 1 ints to rank d. */
    int *sc = calloc(size, sizeof(int)), *sd = calloc(size, sizeof(int));
    int *rc = calloc(size, sizeof(int)), *rd = calloc(size, sizeof(int));
    int st = 0, rt = 0;
    for (int d = 0; d < size; d++) {
        sc[d] = d % 3 + 1; sd[d] = st; st += sc[d];
        rc[d] = rank % 3 + 1; rd[d] = rt; rt += rc[d];
    }
    int *sb = malloc(st * sizeof(int)), *rb = malloc(rt * sizeof(int));
    for (int d = 0; d < size; d++)
        for (int i = 0; i < sc[d]; i++) sb[sd[d] + i] = val(rank, d, i);
    MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD);
    for (int s = 0; s < size; s++)
        for (int i = 0; i < rc[s]; i++) if (rb[rd[s] + i] != val(s, rank, i)) bad++;

    printf("coll rank %d %s\n", rank, bad ? "WRONG" : "ok");
    MPI_Finalize();
    return bad != 0;
}
