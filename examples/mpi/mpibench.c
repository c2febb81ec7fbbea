/*
 * mpibench: times MPI collectives over a range of message sizes, in the shape of LLNL's mpiBench (its -b/-e/-i options
 * and its "Op Bytes: Iters: Avg: Min: Max:" lines, microseconds per call averaged over the iterations, then the average,
 * minimum and maximum over the ranks). After timing, each collective's result is checked against what it must be.
 *
 * Usage: mpibench [-b begin_bytes] [-e end_bytes] [-i iterations]    (sizes like 1K, 64K, 1M; powers of two)
 * Rank 0 prints one line per operation and size, then "RESULT {json}" with the operations, sizes and errors.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ID_LEN 128

static long bytes(const char *s) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*end == 'K' || *end == 'k') v <<= 10;
  else if (*end == 'M' || *end == 'm') v <<= 20;
  return v;
}

enum { BARRIER, BCAST, REDUCE, ALLREDUCE, ALLGATHER, ALLTOALL, OPS };
static const char *NAMES[OPS] = {"Barrier", "Bcast", "Reduce", "Allreduce", "Allgather", "Alltoall"};

/* Element i of rank r's contribution (ints, so sums stay exact). */
static int value(int r, long i) { return (int)((r + 1) * 1000 + (i % 997)); }

static int nodes_of(int size) {
  char node[ID_LEN] = {0};
  const char *nid = getenv("AZ_BATCH_NODE_ID");
  if (nid) strncpy(node, nid, ID_LEN - 1); else gethostname(node, ID_LEN - 1);
  char *all = malloc((size_t)ID_LEN * size);
  MPI_Allgather(node, ID_LEN, MPI_CHAR, all, ID_LEN, MPI_CHAR, MPI_COMM_WORLD);
  int n = 0;
  for (int r = 0; r < size; r++) {
    int first = 1;
    for (int q = 0; q < r; q++) if (!strncmp(all + (size_t)q * ID_LEN, all + (size_t)r * ID_LEN, ID_LEN)) { first = 0; break; }
    n += first;
  }
  free(all);
  return n;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long begin = 8, end = 256 << 10;
  int iters = 100;
  for (int a = 1; a + 1 < argc; a += 2) {
    if (!strcmp(argv[a], "-b")) begin = bytes(argv[a + 1]);
    else if (!strcmp(argv[a], "-e")) end = bytes(argv[a + 1]);
    else if (!strcmp(argv[a], "-i")) iters = atoi(argv[a + 1]);
  }
  if (begin < 4) begin = 4;
  if (end < begin || iters < 1) {
    if (rank == 0) fprintf(stderr, "mpibench: needs -b <= -e and -i >= 1\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int nodes = nodes_of(size);
  long maxInts = end / (long)sizeof(int);
  int *send = malloc(sizeof(int) * maxInts * size), *recv = malloc(sizeof(int) * maxInts * size);
  int errors = 0, lines = 0;
  if (rank == 0) {
    printf("mpibench: %d ranks on %d node(s), %ld..%ld bytes, %d iterations\n", size, nodes, begin, end, iters);
    fflush(stdout);
  }

  for (int op = 0; op < OPS; op++) {
    for (long b = (op == BARRIER ? 0 : begin); ; b = b ? b * 2 : begin) {
      if (b > end) break;
      long n = b / (long)sizeof(int);
      /* Alltoall and Allgather move b bytes per rank pair, as mpiBench counts them. */
      for (long i = 0; i < n * size; i++) send[i] = value(rank, i);
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int it = 0; it < iters; it++) {
        switch (op) {
          case BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
          case BCAST:
            if (rank == 0) memcpy(recv, send, sizeof(int) * n);
            MPI_Bcast(recv, (int)n, MPI_INT, 0, MPI_COMM_WORLD);
            break;
          case REDUCE: MPI_Reduce(send, recv, (int)n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD); break;
          case ALLREDUCE: MPI_Allreduce(send, recv, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD); break;
          case ALLGATHER: MPI_Allgather(send, (int)n, MPI_INT, recv, (int)n, MPI_INT, MPI_COMM_WORLD); break;
          case ALLTOALL: MPI_Alltoall(send, (int)n, MPI_INT, recv, (int)n, MPI_INT, MPI_COMM_WORLD); break;
        }
      }
      double us = (MPI_Wtime() - t0) * 1e6 / iters, sum, mn, mx;
      /* Check the last call's result. */
      long sumOfRanks = (long)size * (size + 1) / 2;
      for (long i = 0; i < n && op != BARRIER; i++) {
        switch (op) {
          case BCAST: if (recv[i] != value(0, i)) errors++; break;
          case REDUCE: if (rank == 0 && recv[i] != (int)(1000 * sumOfRanks + (long)size * (i % 997))) errors++; break;
          case ALLREDUCE: if (recv[i] != (int)(1000 * sumOfRanks + (long)size * (i % 997))) errors++; break;
          case ALLGATHER: for (int r = 0; r < size; r++) if (recv[r * n + i] != value(r, i)) errors++; break;
          /* Block r of my receive buffer is block `rank` of rank r's send buffer. */
          case ALLTOALL: for (int r = 0; r < size; r++) if (recv[r * n + i] != value(r, rank * n + i)) errors++; break;
        }
      }
      MPI_Reduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      MPI_Reduce(&us, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
      MPI_Reduce(&us, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        printf("%-12s Bytes: %8ld Iters: %6d Avg: %10.4f Min: %10.4f Max: %10.4f Comm: MPI_COMM_WORLD Ranks: %d\n",
               NAMES[op], b, iters, sum / size, mn, mx, size);
        lines++;
      }
      if (op == BARRIER) break;
    }
  }
  int total = 0;
  MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("RESULT {\"benchmark\":\"mpibench\",\"ranks\":%d,\"nodes\":%d,\"ops\":%d,\"lines\":%d,\"maxBytes\":%ld,\"errors\":%d}\n",
           size, nodes, OPS, lines, end, total);
    fflush(stdout);
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return total == 0 ? 0 : 5;
}
