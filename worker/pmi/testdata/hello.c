/* hello: each rank prints its rank, the size, its host and how many ranks
   share its node (MPI_COMM_TYPE_SHARED, from PMI_process_mapping). */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size, local;
    char host[256];
    MPI_Comm node;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local);
    gethostname(host, sizeof host);
    printf("hello rank %d of %d on %s node-local %d\n", rank, size, host, local);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
