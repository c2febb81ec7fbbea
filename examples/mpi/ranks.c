/*
 * ranks: the smallest MPI check a job script needs. Every rank contributes its rank number to an MPI_Allreduce;
 * rank 0 prints one RESULT line (JSON) with the world size and the sum, which only a complete communicator gets right
 * (n(n-1)/2). Used by the PBS / Slurm compatibility example (examples/workloads/pbs-script-compat.yaml).
 * Usage: ranks
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long mine = rank, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("RESULT {\"ranks\":%d,\"rankSum\":%ld}\n", size, sum);
  MPI_Finalize();
  return 0;
}
