/*
 * osu_pingpong: point-to-point latency and bandwidth between two nodes, in the shape of the OSU micro-benchmarks'
 * osu_latency (blocking ping-pong, half the round trip) and osu_bw (a window of non-blocking sends, then an ack).
 * Rank 0 pairs with the first rank on another node (AZ_BATCH_NODE_ID, else the host name), so the numbers measure
 * the fabric between nodes; other ranks wait. Every message is filled with a pattern the receiver checks.
 *
 * Usage: osu_pingpong [-m max_bytes] [-i iterations] [-w window]
 * Prints the two OSU-style tables and, on rank 0, "RESULT {json}" with the pair, the sizes and the errors found.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ID_LEN 128

static void fill(unsigned char *buf, int n, int size) {
  for (int i = 0; i < n; i++) buf[i] = (unsigned char)((i * 7 + size) & 0xff);
}

static int check(const unsigned char *buf, int n, int size) {
  for (int i = 0; i < n; i++) if (buf[i] != (unsigned char)((i * 7 + size) & 0xff)) return 1;
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long max = 1 << 20;
  int iters = 200, window = 64;
  for (int a = 1; a + 1 < argc; a += 2) {
    if (!strcmp(argv[a], "-m")) max = atol(argv[a + 1]);
    else if (!strcmp(argv[a], "-i")) iters = atoi(argv[a + 1]);
    else if (!strcmp(argv[a], "-w")) window = atoi(argv[a + 1]);
  }
  if (size < 2 || max < 1 || iters < 1 || window < 1) {
    if (rank == 0) fprintf(stderr, "osu_pingpong: needs at least 2 ranks and positive -m, -i, -w\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  char node[ID_LEN] = {0};
  const char *nid = getenv("AZ_BATCH_NODE_ID");
  if (nid) strncpy(node, nid, ID_LEN - 1); else gethostname(node, ID_LEN - 1);
  char *all = malloc((size_t)ID_LEN * size);
  MPI_Allgather(node, ID_LEN, MPI_CHAR, all, ID_LEN, MPI_CHAR, MPI_COMM_WORLD);
  int partner = 1;
  for (int r = 1; r < size; r++) if (strncmp(all + (size_t)r * ID_LEN, all, ID_LEN) != 0) { partner = r; break; }
  int remote = strncmp(all + (size_t)partner * ID_LEN, all, ID_LEN) != 0;
  if (rank == 0) {
    printf("# OSU MPI Latency Test (osu_pingpong): rank 0 on %s <-> rank %d on %s\n", all, partner, all + (size_t)partner * ID_LEN);
    printf("# %-10s %18s\n", "Size", "Latency (us)");
    fflush(stdout);
  }

  unsigned char *sbuf = malloc(max > 4 ? max : 4), *rbuf = malloc(max > 4 ? max : 4);
  MPI_Request *reqs = malloc(sizeof(MPI_Request) * window);
  int errors = 0, sizes = 0;
  double lat1 = 0, bwmax = 0;
  int me = rank == 0 ? 0 : rank == partner ? 1 : -1;

  for (long n = 1; n <= max; n *= 2, sizes++) {
    int it = n > 8192 ? (iters / 10 > 10 ? iters / 10 : 10) : iters;
    double t0 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
      fill(sbuf, (int)n, (int)n);
      for (int i = 0; i < it + 10; i++) {
        if (i == 10) t0 = MPI_Wtime();
        MPI_Send(sbuf, (int)n, MPI_BYTE, partner, 1, MPI_COMM_WORLD);
        MPI_Recv(rbuf, (int)n, MPI_BYTE, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
      double us = (MPI_Wtime() - t0) * 1e6 / (2.0 * it);
      errors += check(rbuf, (int)n, (int)n);
      if (n == 1) lat1 = us;
      printf("%-12ld %18.2f\n", n, us);
    } else if (me == 1) {
      for (int i = 0; i < it + 10; i++) {
        MPI_Recv(rbuf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(rbuf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
      }
      errors += check(rbuf, (int)n, (int)n);
    }
  }
  if (rank == 0) {
    printf("# OSU MPI Bandwidth Test (osu_pingpong): window %d\n# %-10s %18s\n", window, "Size", "Bandwidth (MB/s)");
    fflush(stdout);
  }
  for (long n = 1; n <= max; n *= 2) {
    int it = n > 8192 ? (iters / 20 > 5 ? iters / 20 : 5) : iters / 4 > 10 ? iters / 4 : 10;
    double t0 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
      fill(sbuf, (int)n, (int)n + 1);
      for (int i = 0; i < it + 2; i++) {
        if (i == 2) t0 = MPI_Wtime();
        for (int w = 0; w < window; w++) MPI_Isend(sbuf, (int)n, MPI_BYTE, partner, 2, MPI_COMM_WORLD, &reqs[w]);
        MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
        MPI_Recv(rbuf, 4, MPI_BYTE, partner, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
      double mbs = (double)n * window * it / (MPI_Wtime() - t0) / 1e6;
      if (mbs > bwmax) bwmax = mbs;
      printf("%-12ld %18.2f\n", n, mbs);
    } else if (me == 1) {
      for (int i = 0; i < it + 2; i++) {
        for (int w = 0; w < window; w++) MPI_Irecv(rbuf, (int)n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &reqs[w]);
        MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
        MPI_Send(sbuf, 4, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
      }
      errors += check(rbuf, (int)n, (int)n + 1);
    }
  }
  int total = 0;
  MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("RESULT {\"benchmark\":\"osu_pingpong\",\"ranks\":%d,\"pair\":[0,%d],\"pairOnTwoNodes\":%s,\"sizes\":%d,\"maxBytes\":%ld,"
           "\"errors\":%d,\"latencyUs\":%.3f,\"bandwidthMBs\":%.3f}\n",
           size, partner, remote ? "true" : "false", sizes, max, total, lat1, bwmax);
    fflush(stdout);
  }
  free(all);
  free(sbuf);
  free(rbuf);
  free(reqs);
  MPI_Finalize();
  return total == 0 ? 0 : 5;
}
