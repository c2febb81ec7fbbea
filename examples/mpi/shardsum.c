/*
 * shardsum: the demo MPI program. Every node holds its own shards (fixed 64-byte records, written by
 * examples/data) in a node-local directory; the ranks of a node split that node's shard files between them,
 * parse every record and the totals are combined with MPI_Reduce. Rank 0 prints one RESULT line (JSON)
 * that the control plane's demo checks against the totals known when the data set was generated.
 *
 * Record format: 16 ASCII digits (the value), 47 filler characters, '\n'  => 64 bytes.
 * Usage: shardsum <shard-dir> [result-file]
 */
#include <mpi.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECORD 64
#define ID_LEN 128

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted regular-file names in dir; the caller frees. */
static int list_files(const char *dir, char ***out) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0, cap = 64;
  char **names = malloc(sizeof(char *) * cap);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (n == cap) { cap *= 2; names = realloc(names, sizeof(char *) * cap); }
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof(char *), cmp_str);
  *out = names;
  return n;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: shardsum <shard-dir> [result-file]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  /* Which node am I on? On Azure Batch every node has its own AZ_BATCH_NODE_ID. Ranks that share a node
   * share a shard directory, so they split its files by their rank within the node. */
  char node[ID_LEN] = {0};
  const char *nid = getenv("AZ_BATCH_NODE_ID");
  if (nid) strncpy(node, nid, ID_LEN - 1); else gethostname(node, ID_LEN - 1);
  char *all = malloc((size_t)ID_LEN * size);
  MPI_Allgather(node, ID_LEN, MPI_CHAR, all, ID_LEN, MPI_CHAR, MPI_COMM_WORLD);
  int color = 0, nodes = 0;
  for (int r = 0; r < size; r++) {
    int first = 1;
    for (int q = 0; q < r; q++) if (strncmp(all + (size_t)q * ID_LEN, all + (size_t)r * ID_LEN, ID_LEN) == 0) { first = 0; break; }
    if (first) { if (strncmp(all + (size_t)r * ID_LEN, node, ID_LEN) == 0) color = nodes; nodes++; }
  }
  free(all);
  MPI_Comm local;
  MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
  int lrank, lsize;
  MPI_Comm_rank(local, &lrank);
  MPI_Comm_size(local, &lsize);

  char **files = NULL;
  int nfiles = list_files(argv[1], &files);
  if (nfiles < 0) {
    fprintf(stderr, "rank %d on %s: cannot open shard dir %s\n", rank, node, argv[1]);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }

  /* totals: records, value sum, bytes, files, bad records */
  uint64_t mine[5] = {0, 0, 0, 0, 0};
  char buf[RECORD * 1024];
  for (int i = lrank; i < nfiles; i += lsize) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], files[i]);
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "rank %d: cannot read %s\n", rank, path); MPI_Abort(MPI_COMM_WORLD, 4); }
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
      mine[2] += got;
      for (size_t off = 0; off + RECORD <= got; off += RECORD) {
        const char *rec = buf + off;
        uint64_t v = 0;
        int ok = rec[RECORD - 1] == '\n';
        for (int k = 0; k < 16 && ok; k++) {
          if (rec[k] < '0' || rec[k] > '9') ok = 0; else v = v * 10 + (uint64_t)(rec[k] - '0');
        }
        if (ok) { mine[0]++; mine[1] += v; } else mine[4]++;
      }
      if (got % RECORD) mine[4]++; /* a torn record: shard boundaries must be record-aligned */
    }
    fclose(f);
    mine[3]++;
  }
  printf("rank %d node %s local %d/%d files %llu records %llu\n", rank, node, lrank, lsize,
         (unsigned long long)mine[3], (unsigned long long)mine[0]);
  fflush(stdout);

  uint64_t total[5];
  MPI_Reduce(mine, total, 5, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  int rc = 0;
  if (rank == 0) {
    char line[512];
    snprintf(line, sizeof line,
             "{\"records\":%llu,\"valueSum\":%llu,\"bytes\":%llu,\"files\":%llu,\"badRecords\":%llu,\"ranks\":%d,\"nodes\":%d}",
             (unsigned long long)total[0], (unsigned long long)total[1], (unsigned long long)total[2],
             (unsigned long long)total[3], (unsigned long long)total[4], size, nodes);
    printf("RESULT %s\n", line);
    fflush(stdout);
    if (argc > 2) {
      FILE *out = fopen(argv[2], "w");
      if (out) { fprintf(out, "%s\n", line); fclose(out); } else rc = 5;
    }
    if (total[4] > 0) rc = 6;
  }
  for (int i = 0; i < nfiles; i++) free(files[i]);
  free(files);
  MPI_Comm_free(&local);
  MPI_Finalize();
  return rc;
}
