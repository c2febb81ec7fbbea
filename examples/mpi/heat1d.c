/*
 * heat1d: a decomposed-case MPI solver in the shape of OpenFOAM's decomposePar / <solver> -parallel / reconstructPar,
 * small enough to build on every node in a second. The case is a directory:
 *   system/controlDict   "steps <K>" and "alpha <a>" lines
 *   0/T                  the initial temperature: a count line N, then N values, one per line
 *
 *   heat1d decompose <case> <out> <np>   split <case>/0/T into <out>/processor<i>/0/T (contiguous chunks), copy system/
 *   heat1d solve <case>                  (MPI, one rank per processor<i>) K explicit steps of u += a*(u[i-1]-2u[i]+u[i+1])
 *                                        with fixed ends, halos exchanged with the neighbours; writes processor<i>/<K>/T
 *   heat1d reconstruct <case>            joins every processor<i>/<K>/T into <case>/<K>/T and writes <case>/log.reconstruct
 *
 * The solve step prints one line per rank (host and chunk) and, on rank 0, "RESULT {json}" with the global sum.
 * Values are written with %.17g, so a reader can recompute the run exactly.
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void die(const char *what, const char *path) {
  fprintf(stderr, "heat1d: %s %s: %s\n", what, path, strerror(errno));
  exit(2);
}

static void mkdirs(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p == '/') {
      *p = 0;
      if (mkdir(buf, 0777) != 0 && errno != EEXIST) die("mkdir", buf);
      *p = '/';
    }
  }
  if (mkdir(buf, 0777) != 0 && errno != EEXIST) die("mkdir", buf);
}

static double *read_field(const char *path, long *n) {
  FILE *f = fopen(path, "r");
  if (!f) die("open", path);
  if (fscanf(f, "%ld", n) != 1 || *n < 1) { fprintf(stderr, "heat1d: %s: bad count\n", path); exit(2); }
  double *u = malloc(sizeof(double) * (size_t)*n);
  for (long i = 0; i < *n; i++) {
    if (fscanf(f, "%lf", &u[i]) != 1) { fprintf(stderr, "heat1d: %s: value %ld missing\n", path, i); exit(2); }
  }
  fclose(f);
  return u;
}

static void write_field(const char *path, const double *u, long n) {
  FILE *f = fopen(path, "w");
  if (!f) die("create", path);
  fprintf(f, "%ld\n", n);
  for (long i = 0; i < n; i++) fprintf(f, "%.17g\n", u[i]);
  if (fclose(f) != 0) die("write", path);
}

static void read_control(const char *casedir, long *steps, double *alpha) {
  char path[4096], key[64];
  snprintf(path, sizeof path, "%s/system/controlDict", casedir);
  FILE *f = fopen(path, "r");
  if (!f) die("open", path);
  *steps = 0;
  *alpha = 0.25;
  while (fscanf(f, "%63s", key) == 1) {
    if (!strcmp(key, "steps")) { if (fscanf(f, "%ld", steps) != 1) break; }
    else if (!strcmp(key, "alpha")) { if (fscanf(f, "%lf", alpha) != 1) break; }
  }
  fclose(f);
}

static void copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb");
  if (!in) die("open", from);
  FILE *out = fopen(to, "wb");
  if (!out) die("create", to);
  char buf[65536];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, k, out);
  fclose(in);
  if (fclose(out) != 0) die("write", to);
}

static int decompose(const char *casedir, const char *out, int np) {
  char path[4096];
  long n;
  snprintf(path, sizeof path, "%s/0/T", casedir);
  double *u = read_field(path, &n);
  if (np < 1 || np > n) { fprintf(stderr, "heat1d: cannot split %ld cells over %d processors\n", n, np); return 2; }
  snprintf(path, sizeof path, "%s/system", out);
  mkdirs(path);
  char from[4096];
  snprintf(from, sizeof from, "%s/system/controlDict", casedir);
  snprintf(path, sizeof path, "%s/system/controlDict", out);
  copy_file(from, path);
  for (int p = 0; p < np; p++) {
    long lo = n * p / np, hi = n * (p + 1) / np;
    snprintf(path, sizeof path, "%s/processor%d/0", out, p);
    mkdirs(path);
    snprintf(path, sizeof path, "%s/processor%d/0/T", out, p);
    write_field(path, u + lo, hi - lo);
  }
  printf("decomposed %ld cells into %d processors under %s\n", n, np, out);
  free(u);
  return 0;
}

static int solve(const char *casedir) {
  int rank, size, len;
  char host[MPI_MAX_PROCESSOR_NAME], path[4096];
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Get_processor_name(host, &len);
  long steps;
  double alpha;
  read_control(casedir, &steps, &alpha);
  long n;
  snprintf(path, sizeof path, "%s/processor%d/0/T", casedir, rank);
  double *chunk = read_field(path, &n);
  const char *node = getenv("AZ_BATCH_NODE_ID");
  printf("rank %d of %d on %s (node %s): %ld cells, %ld steps\n", rank, size, host, node ? node : "?", n, steps);
  fflush(stdout);
  /* u[0] and u[n+1] are the halo cells. */
  double *u = calloc((size_t)n + 2, sizeof(double)), *v = calloc((size_t)n + 2, sizeof(double));
  memcpy(u + 1, chunk, sizeof(double) * (size_t)n);
  int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  for (long s = 0; s < steps; s++) {
    MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 0, &u[n + 1], 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&u[n], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (long i = 1; i <= n; i++) {
      int fixed = (rank == 0 && i == 1) || (rank == size - 1 && i == n);
      v[i] = fixed ? u[i] : u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
    }
    double *t = u; u = v; v = t;
  }
  snprintf(path, sizeof path, "%s/processor%d/%ld", casedir, rank, steps);
  mkdirs(path);
  snprintf(path, sizeof path, "%s/processor%d/%ld/T", casedir, rank, steps);
  write_field(path, u + 1, n);
  double local = 0, total = 0;
  for (long i = 1; i <= n; i++) local += u[i];
  long cells = n, allCells = 0;
  MPI_Reduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&cells, &allCells, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  /* Every rank has written its processor directory before anyone leaves: reconstruct may start once rank 0 is back. */
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("RESULT {\"ranks\":%d,\"cells\":%ld,\"steps\":%ld,\"sum\":%.17g}\n", size, allCells, steps, total);
  free(chunk); free(u); free(v);
  return 0;
}

static int reconstruct(const char *casedir) {
  long steps;
  double alpha;
  read_control(casedir, &steps, &alpha);
  char path[4096], logpath[4096];
  snprintf(path, sizeof path, "%s/%ld", casedir, steps);
  mkdirs(path);
  snprintf(logpath, sizeof logpath, "%s/log.reconstruct", casedir);
  FILE *log = fopen(logpath, "w");
  if (!log) die("create", logpath);
  long total = 0, cap = 1024;
  double *all = malloc(sizeof(double) * (size_t)cap);
  int p = 0;
  for (;; p++) {
    long n;
    snprintf(path, sizeof path, "%s/processor%d/%ld/T", casedir, p, steps);
    if (access(path, R_OK) != 0) break;
    double *u = read_field(path, &n);
    while (total + n > cap) { cap *= 2; all = realloc(all, sizeof(double) * (size_t)cap); }
    memcpy(all + total, u, sizeof(double) * (size_t)n);
    total += n;
    fprintf(log, "processor%d: %ld cells\n", p, n);
    free(u);
  }
  if (p == 0) { fprintf(stderr, "heat1d: no processor directories with time %ld under %s\n", steps, casedir); return 2; }
  snprintf(path, sizeof path, "%s/%ld/T", casedir, steps);
  write_field(path, all, total);
  fprintf(log, "reconstructed %ld cells from %d processors at time %ld\n", total, p, steps);
  fclose(log);
  printf("reconstructed %ld cells from %d processors into %s\n", total, p, path);
  free(all);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 5 && !strcmp(argv[1], "decompose")) return decompose(argv[2], argv[3], atoi(argv[4]));
  if (argc >= 3 && !strcmp(argv[1], "reconstruct")) return reconstruct(argv[2]);
  if (argc >= 3 && !strcmp(argv[1], "solve")) {
    MPI_Init(&argc, &argv);
    int rc = solve(argv[2]);
    MPI_Finalize();
    return rc;
  }
  fprintf(stderr, "usage: heat1d decompose <case> <out> <np> | solve <case> | reconstruct <case>\n");
  return 2;
}
