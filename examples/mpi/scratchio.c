/*
 * scratchio: an IOR-like check of a shared scratch (examples/workloads/parallel-scratch-ior.yaml). Every rank writes
 * one block of its own pattern to DIR/ior/block-<rank> (file per process), syncs it and closes it; after a barrier each
 * rank reads the block of the rank half the world away (with ranks placed by node, one on another node), and checks
 * every byte. Rank 0 prints one RESULT line (JSON) with the ranks, the bytes per rank and the errors, summed over all
 * ranks, and writes the same line to DIR/ior/summary.txt. Exit status 1 when a byte differs or a file is missing.
 * Usage: scratchio DIR [BYTES_PER_RANK]
 */
#include <mpi.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned char pattern_byte(int rank, long i) { return (unsigned char)((rank * 131 + i * 7 + (i >> 12)) & 0xff); }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: scratchio DIR [BYTES_PER_RANK]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long bytes = argc > 2 ? atol(argv[2]) : 1 << 20;
  char dir[4096], path[4200];
  snprintf(dir, sizeof dir, "%s/ior", argv[1]);
  if (rank == 0 && mkdir(dir, 0755) != 0 && errno != EEXIST) { perror(dir); MPI_Abort(MPI_COMM_WORLD, 1); }
  MPI_Barrier(MPI_COMM_WORLD);

  unsigned char *buf = malloc((size_t)bytes);
  for (long i = 0; i < bytes; i++) buf[i] = pattern_byte(rank, i);
  snprintf(path, sizeof path, "%s/block-%d", dir, rank);
  long errors = 0;
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(buf, 1, (size_t)bytes, f) != (size_t)bytes || fflush(f) != 0 || fsync(fileno(f)) != 0) { perror(path); errors++; }
  if (f) fclose(f);
  MPI_Barrier(MPI_COMM_WORLD);

  int other = (rank + size / 2) % size;
  snprintf(path, sizeof path, "%s/block-%d", dir, other);
  memset(buf, 0, (size_t)bytes);
  f = fopen(path, "rb");
  if (!f || fread(buf, 1, (size_t)bytes, f) != (size_t)bytes) { perror(path); errors++; }
  else for (long i = 0; i < bytes; i++) if (buf[i] != pattern_byte(other, i)) errors++;
  if (f) fclose(f);
  printf("rank %d wrote block-%d, read block-%d: %ld errors\n", rank, rank, other, errors);

  long total = 0;
  MPI_Reduce(&errors, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    char line[256];
    snprintf(line, sizeof line, "RESULT {\"ranks\":%d,\"bytesPerRank\":%ld,\"errors\":%ld}\n", size, bytes, total);
    fputs(line, stdout);
    fflush(stdout);
    snprintf(path, sizeof path, "%s/summary.txt", dir);
    FILE *s = fopen(path, "w");
    if (s) { fputs(line, s); fclose(s); }
  }
  free(buf);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
