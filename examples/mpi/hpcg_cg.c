/*
 * hpcg_cg: a conjugate-gradient solve in the shape of HPCG. It reads hpcg.dat from its working directory (HPCG's own
 * format: two header lines, the local grid "nx ny nz", the run time in seconds), builds HPCG's matrix on the global
 * grid (27-point stencil: 26 on the diagonal, -1 for every neighbour; the ranks' local grids stacked along z, halo
 * planes exchanged with the neighbours below and above), with HPCG's right-hand side b = A * ones, and solves from
 * x = 0 with Jacobi-preconditioned CG (HPCG uses a multigrid preconditioner) until the residual has dropped by 1e-10.
 * The answer is known: x must be all ones. Prints HPCG-style lines and, on rank 0, "RESULT {json}".
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nx, ny, nz, rank, size, below, above;
static long plane, local;

#define AT(v, i, j, k) (v)[((long)(k) + 1) * plane + (long)(j) * nx + (i)] /* k in -1..nz: halo planes at -1 and nz */

/* Fills the halo planes of v from the neighbouring ranks (zero at the ends of the global grid). */
static void halo(double *v) {
  MPI_Sendrecv(v + plane, (int)plane, MPI_DOUBLE, below, 1, v + (nz + 1) * plane, (int)plane, MPI_DOUBLE, above, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv(v + nz * plane, (int)plane, MPI_DOUBLE, above, 2, v, (int)plane, MPI_DOUBLE, below, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (below == MPI_PROC_NULL) memset(v, 0, sizeof(double) * plane);
  if (above == MPI_PROC_NULL) memset(v + (nz + 1) * plane, 0, sizeof(double) * plane);
}

/* y = A x on the interior (x's halos filled). Neighbours outside the global grid do not exist. */
static void spmv(double *x, double *y) {
  halo(x);
  int gz0 = rank * nz, gnz = size * nz;
  for (int k = 0; k < nz; k++)
    for (int j = 0; j < ny; j++)
      for (int i = 0; i < nx; i++) {
        double s = 26.0 * AT(x, i, j, k);
        for (int dk = -1; dk <= 1; dk++) {
          if (gz0 + k + dk < 0 || gz0 + k + dk >= gnz) continue;
          for (int dj = -1; dj <= 1; dj++) {
            if (j + dj < 0 || j + dj >= ny) continue;
            for (int di = -1; di <= 1; di++) {
              if (i + di < 0 || i + di >= nx || (di == 0 && dj == 0 && dk == 0)) continue;
              s -= AT(x, i + di, j + dj, k + dk);
            }
          }
        }
        AT(y, i, j, k) = s;
      }
}

static double dot(const double *a, const double *b) {
  double s = 0, t;
  for (long p = plane; p < plane + local; p++) s += a[p] * b[p];
  MPI_Allreduce(&s, &t, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return t;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int dims[4] = {0, 0, 0, 0};
  if (rank == 0) {
    const char *path = argc > 1 ? argv[1] : "hpcg.dat";
    FILE *f = fopen(path, "r");
    char line[512];
    int ok = f && fgets(line, sizeof line, f) && fgets(line, sizeof line, f) && fgets(line, sizeof line, f) &&
             sscanf(line, "%d %d %d", &dims[0], &dims[1], &dims[2]) == 3 && fgets(line, sizeof line, f) && sscanf(line, "%d", &dims[3]) == 1;
    if (f) fclose(f);
    if (!ok || dims[0] < 2 || dims[1] < 2 || dims[2] < 2) {
      fprintf(stderr, "hpcg_cg: cannot read %s: HPCG's hpcg.dat (two header lines, \"nx ny nz\", run time) must be in the working directory\n", path);
      dims[0] = 0;
    }
  }
  MPI_Bcast(dims, 4, MPI_INT, 0, MPI_COMM_WORLD);
  if (dims[0] == 0) MPI_Abort(MPI_COMM_WORLD, 2);
  nx = dims[0]; ny = dims[1]; nz = dims[2];
  plane = (long)nx * ny;
  local = plane * nz;
  below = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  above = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  long n = local + 2 * plane;
  double *x = calloc(n, sizeof(double)), *b = calloc(n, sizeof(double)), *r = calloc(n, sizeof(double));
  double *z = calloc(n, sizeof(double)), *p = calloc(n, sizeof(double)), *ap = calloc(n, sizeof(double)), *ones = calloc(n, sizeof(double));
  for (long q = plane; q < plane + local; q++) ones[q] = 1.0;
  spmv(ones, b);
  if (rank == 0) {
    printf("HPCG-shaped CG (hpcg_cg): %d ranks, local grid %d x %d x %d, global %d x %d x %d, run time asked %d s\n",
           size, nx, ny, nz, nx, ny, nz * size, dims[3]);
    fflush(stdout);
  }

  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  memcpy(r, b, sizeof(double) * n);
  for (long q = plane; q < plane + local; q++) { z[q] = r[q] / 26.0; p[q] = z[q]; }
  double rz = dot(r, z), r0 = sqrt(dot(r, r)), rn = r0;
  int it = 0;
  for (; it < 500 && rn / r0 > 1e-10; it++) {
    spmv(p, ap);
    double alpha = rz / dot(p, ap);
    for (long q = plane; q < plane + local; q++) { x[q] += alpha * p[q]; r[q] -= alpha * ap[q]; }
    rn = sqrt(dot(r, r));
    for (long q = plane; q < plane + local; q++) z[q] = r[q] / 26.0;
    double rzNew = dot(r, z), beta = rzNew / rz;
    rz = rzNew;
    for (long q = plane; q < plane + local; q++) p[q] = z[q] + beta * p[q];
    if (rank == 0 && (it + 1) % 10 == 0) printf("Iteration %3d: scaled residual %.6e\n", it + 1, rn / r0);
  }
  double secs = MPI_Wtime() - t0;
  double err = 0, gerr;
  for (long q = plane; q < plane + local; q++) if (fabs(x[q] - 1.0) > err) err = fabs(x[q] - 1.0);
  MPI_Allreduce(&err, &gerr, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  /* Per iteration: the 27-point product (2 flops a term), three dot products, three vector updates, the preconditioner. */
  double flops = (double)it * (double)local * size * (2.0 * 27 + 3 * 2.0 + 3 * 2.0 + 1.0);
  double gflops = flops / secs / 1e9;
  int valid = rn / r0 <= 1e-10 && gerr < 1e-6;
  if (rank == 0) {
    printf("Iterations %d, scaled residual %.6e, max |x - 1| %.3e\n", it, rn / r0, gerr);
    printf("Final Summary::HPCG result is %s with a GFLOP/s rating of=%.6f\n", valid ? "VALID" : "INVALID", gflops);
    printf("RESULT {\"benchmark\":\"hpcg\",\"ranks\":%d,\"nx\":%d,\"ny\":%d,\"nz\":%d,\"iterations\":%d,\"scaledResidual\":%.6e,\"maxError\":%.6e,\"valid\":%s,\"gflops\":%.6f}\n",
           size, nx, ny, nz, it, rn / r0, gerr, valid ? "true" : "false", gflops);
    fflush(stdout);
  }
  free(x); free(b); free(r); free(z); free(p); free(ap); free(ones);
  MPI_Finalize();
  return valid ? 0 : 6;
}
