/*
 * hpl_lu: a dense linear solve in the shape of HPL (High-Performance Linpack). It reads the problem sizes, block sizes
 * and process grids from an HPL.dat in its working directory (HPL's own format; rank 0 reads it and broadcasts),
 * factors a random N x N system with partial pivoting (LU, right-looking, columns distributed block-cyclically in
 * blocks of NB over all P x Q ranks), solves it, and checks the solution the way HPL does:
 *   ||Ax-b||_oo / (eps * (||A||_oo * ||x||_oo + ||b||_oo) * N) < threshold   -> PASSED
 * Prints HPL's result lines and, on rank 0, "RESULT {json}" per run. Exits 0 only when every run passed.
 */
#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXRUNS 8

/* The matrix and right-hand side: entries in [-0.5, 0.5) from a hash of (row, column), the same on every rank. */
static double entry(long i, long j) {
  uint64_t x = (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(j + 7) * 0xC2B2AE3D27D4EB4FULL;
  x ^= x >> 31; x *= 0xBF58476D1CE4E5B9ULL; x ^= x >> 27; x *= 0x94D049BB133111EBULL; x ^= x >> 33;
  return (double)(x >> 11) / 9007199254740992.0 - 0.5;
}

/* Reads the numbers after `count` on the line following a "# of ..." line: HPL.dat keeps values first, comments after. */
static int read_line_ints(FILE *f, long *out, int max) {
  char line[1024];
  if (!fgets(line, sizeof line, f)) return -1;
  int n = 0;
  char *p = line, *end;
  while (n < max) {
    long v = strtol(p, &end, 10);
    if (end == p) break;
    out[n++] = v;
    p = end;
  }
  return n;
}

static int read_hpl_dat(const char *path, long *ns, int *nn, long *nbs, int *nnb, long *ps, long *qs, int *ngrid, double *threshold) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[1024];
  long count[1];
  for (int i = 0; i < 4; i++) if (!fgets(line, sizeof line, f)) { fclose(f); return -2; }
  if (read_line_ints(f, count, 1) != 1) { fclose(f); return -3; }
  *nn = (int)(count[0] < MAXRUNS ? count[0] : MAXRUNS);
  if (read_line_ints(f, ns, MAXRUNS) < *nn) { fclose(f); return -4; }
  if (read_line_ints(f, count, 1) != 1) { fclose(f); return -5; }
  *nnb = (int)(count[0] < MAXRUNS ? count[0] : MAXRUNS);
  if (read_line_ints(f, nbs, MAXRUNS) < *nnb) { fclose(f); return -6; }
  if (!fgets(line, sizeof line, f)) { fclose(f); return -7; } /* PMAP */
  if (read_line_ints(f, count, 1) != 1) { fclose(f); return -8; }
  *ngrid = (int)(count[0] < MAXRUNS ? count[0] : MAXRUNS);
  if (read_line_ints(f, ps, MAXRUNS) < *ngrid || read_line_ints(f, qs, MAXRUNS) < *ngrid) { fclose(f); return -9; }
  if (!fgets(line, sizeof line, f) || sscanf(line, "%lf", threshold) != 1) { fclose(f); return -10; }
  fclose(f);
  return 0;
}

/* One run on `np` ranks of `comm`: returns the scaled residual on rank 0. */
static double run(MPI_Comm comm, long n, long nb, double *seconds, double **xout) {
  int rank, np;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &np);
  long cols = n + 1; /* the augmented column n holds b */
  long mine = 0;
  for (long j = 0; j < cols; j++) if ((j / nb) % np == rank) mine++;
  double *a = malloc(sizeof(double) * n * (mine ? mine : 1));
  long *gcol = malloc(sizeof(long) * (mine ? mine : 1));
  long k = 0;
  for (long j = 0; j < cols; j++) {
    if ((j / nb) % np != rank) continue;
    gcol[k] = j;
    for (long i = 0; i < n; i++) a[k * n + i] = j < n ? entry(i, j) : entry(i, -1);
    k++;
  }
  double *l = malloc(sizeof(double) * (n + 1));
  MPI_Barrier(comm);
  double t0 = MPI_Wtime();
  long first = 0; /* first local column with global index > current pivot column */
  for (long c = 0; c < n; c++) {
    int owner = (int)((c / nb) % np);
    if (owner == rank) {
      double *col = a + first * n;
      long p = c;
      for (long i = c + 1; i < n; i++) if (fabs(col[i]) > fabs(col[p])) p = i;
      double t = col[c]; col[c] = col[p]; col[p] = t;
      l[n] = (double)p;
      for (long i = c + 1; i < n; i++) l[i] = col[i] / col[c];
      first++;
    }
    MPI_Bcast(l + c + 1, (int)(n - c), MPI_DOUBLE, owner, comm); /* multipliers and, last, the pivot row */
    long p = (long)l[n];
    for (long q = first; q < mine; q++) {
      double *col = a + q * n;
      double t = col[c]; col[c] = col[p]; col[p] = t;
      double u = col[c];
      for (long i = c + 1; i < n; i++) col[i] -= l[i] * u;
    }
  }
  /* Gather U and the transformed b on rank 0, which solves and checks. */
  int *counts = NULL, *displs = NULL;
  int sendCount = (int)(mine * n);
  if (rank == 0) counts = malloc(sizeof(int) * np), displs = malloc(sizeof(int) * np);
  MPI_Gather(&sendCount, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
  double *all = NULL;
  if (rank == 0) {
    long off = 0;
    for (int r = 0; r < np; r++) { displs[r] = (int)off; off += counts[r]; }
    all = malloc(sizeof(double) * off);
  }
  MPI_Gatherv(a, sendCount, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, comm);
  double resid = 0;
  if (rank == 0) {
    /* Column j lives on rank (j/nb)%np at local index: blocks before it on that rank times nb plus the offset. */
    double *u = malloc(sizeof(double) * n * cols);
    for (long j = 0; j < cols; j++) {
      int r = (int)((j / nb) % np);
      long local = (j / nb / np) * nb + j % nb;
      memcpy(u + j * n, all + displs[r] + local * n, sizeof(double) * n);
    }
    double *x = malloc(sizeof(double) * n);
    for (long i = n - 1; i >= 0; i--) {
      double s = u[n * n + i];
      for (long j = i + 1; j < n; j++) s -= u[j * n + i] * x[j];
      x[i] = s / u[i * n + i];
    }
    *seconds = MPI_Wtime() - t0;
    double normA = 0, normX = 0, normB = 0, normR = 0;
    for (long i = 0; i < n; i++) {
      double row = 0, r = -entry(i, -1);
      for (long j = 0; j < n; j++) { row += fabs(entry(i, j)); r += entry(i, j) * x[j]; }
      if (row > normA) normA = row;
      if (fabs(x[i]) > normX) normX = fabs(x[i]);
      if (fabs(entry(i, -1)) > normB) normB = fabs(entry(i, -1));
      if (fabs(r) > normR) normR = fabs(r);
    }
    resid = normR / (DBL_EPSILON / 2 * (normA * normX + normB) * (double)n);
    *xout = x;
    free(u);
    free(all);
    free(counts);
    free(displs);
  }
  free(a);
  free(gcol);
  free(l);
  return resid;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long ns[MAXRUNS], nbs[MAXRUNS], ps[MAXRUNS], qs[MAXRUNS];
  int nn = 0, nnb = 0, ngrid = 0;
  double threshold = 16.0;
  int rc = 0;
  if (rank == 0) {
    rc = read_hpl_dat(argc > 1 ? argv[1] : "HPL.dat", ns, &nn, nbs, &nnb, ps, qs, &ngrid, &threshold);
    if (rc) fprintf(stderr, "hpl_lu: cannot read %s (error %d): HPL.dat must be in the working directory\n", argc > 1 ? argv[1] : "HPL.dat", rc);
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rc) MPI_Abort(MPI_COMM_WORLD, 2);
  int header[3] = {nn, nnb, ngrid};
  MPI_Bcast(header, 3, MPI_INT, 0, MPI_COMM_WORLD);
  nn = header[0]; nnb = header[1]; ngrid = header[2];
  MPI_Bcast(ns, MAXRUNS, MPI_LONG, 0, MPI_COMM_WORLD);
  MPI_Bcast(nbs, MAXRUNS, MPI_LONG, 0, MPI_COMM_WORLD);
  MPI_Bcast(ps, MAXRUNS, MPI_LONG, 0, MPI_COMM_WORLD);
  MPI_Bcast(qs, MAXRUNS, MPI_LONG, 0, MPI_COMM_WORLD);
  MPI_Bcast(&threshold, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("================================================================================\n");
    printf("HPL-shaped LU solve (hpl_lu), %d ranks\n", size);
    printf("T/V                N    NB     P     Q               Time                 Gflops\n");
    printf("--------------------------------------------------------------------------------\n");
    fflush(stdout);
  }
  int failed = 0, runs = 0;
  for (int g = 0; g < ngrid; g++) {
    long grid = ps[g] * qs[g];
    if (grid < 1 || grid > size) {
      if (rank == 0) fprintf(stderr, "hpl_lu: grid %ld x %ld needs %ld ranks, this run has %d\n", ps[g], qs[g], grid, size);
      failed++;
      continue;
    }
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, rank < grid ? 0 : MPI_UNDEFINED, rank, &comm);
    for (int i = 0; i < nn; i++) {
      for (int j = 0; j < nnb; j++) {
        double secs = 0, resid = 0;
        double *x = NULL;
        if (comm != MPI_COMM_NULL) resid = run(comm, ns[i], nbs[j], &secs, &x);
        if (rank == 0) {
          double n = (double)ns[i];
          double gflops = (2.0 / 3.0 * n * n * n + 2.0 * n * n) / secs / 1e9;
          int passed = resid < threshold && isfinite(resid);
          printf("WR00C2R2  %9ld %5ld %5ld %5ld %18.2f %22.4e\n", ns[i], nbs[j], ps[g], qs[g], secs, gflops);
          printf("||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)= %18.7f ...... %s\n", resid, passed ? "PASSED" : "FAILED");
          printf("RESULT {\"benchmark\":\"hpl\",\"n\":%ld,\"nb\":%ld,\"p\":%ld,\"q\":%ld,\"ranks\":%ld,\"residual\":%.7f,\"threshold\":%.1f,\"passed\":%s,\"gflops\":%.6f}\n",
                 ns[i], nbs[j], ps[g], qs[g], grid, resid, threshold, passed ? "true" : "false", gflops);
          fflush(stdout);
          failed += !passed;
          runs++;
          free(x);
        }
      }
    }
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
  if (rank == 0) {
    printf("================================================================================\n");
    printf("Finished %6d tests with the following results:\n%12d tests completed and passed residual checks,\n%12d tests completed and failed residual checks.\n",
           runs, runs - failed, failed);
    fflush(stdout);
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return failed ? 6 : 0;
}
