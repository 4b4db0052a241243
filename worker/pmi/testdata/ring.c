/* ring: a token goes around the ranks twice, each adding its rank; rank 0
   checks the sum. Exits 1 on a wrong sum. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size, token = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int lap = 0; lap < 2; lap++) {
        if (rank == 0) {
            int got;
            MPI_Sendrecv(&token, 1, MPI_INT, next, 0, &got, 1, MPI_INT, prev, 0,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token = got;
        } else {
            MPI_Recv(&token, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token += rank;
            MPI_Send(&token, 1, MPI_INT, next, 0, MPI_COMM_WORLD);
        }
    }
    int want = size * (size - 1); /* two laps of 0+1+...+size-1 */
    if (rank == 0) {
        printf("ring %d want %d %s\n", token, want, token == want ? "ok" : "WRONG");
    }
    MPI_Finalize();
    return rank == 0 && token != want;
}
