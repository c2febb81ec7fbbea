/*
 * emutcp.so (Batch emulator only): TCP services in the emulator's virtual networks, loaded into every process of
 * an emulated node with LD_PRELOAD (runner/tcpServices.ts compiles it at start). It replaces libc's connect() for
 * IPv4 destinations listed in the table $AZ_BATCH_EMULATOR_TCP_SERVICES ("address<TAB>port<TAB>subnet<TAB>
 * targetPort" lines, written by the emulator) and leaves every other connect() alone:
 *   - the node's pool is in the service's subnet ($AZ_BATCH_EMULATOR_NODE_SUBNET, case-insensitive): the connection
 *     goes to 127.0.0.1:<targetPort>, where the local stack's server for that service listens;
 *   - the address is a service's but the port is not in the table: ECONNREFUSED from the subnet (a host that sends
 *     RST), ETIMEDOUT from anywhere else;
 *   - the node is outside the subnet (or its pool in no network): ETIMEDOUT at once, as a connection whose SYN a
 *     network security group drops ends (without the two minutes of retransmissions).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

struct service { in_addr_t addr; in_port_t port; in_port_t target; char subnet[512]; };

static struct service services[256];
static int count;
static pthread_once_t once = PTHREAD_ONCE_INIT;
typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);
static connect_fn real_connect;

static void load(void) {
  real_connect = (connect_fn)dlsym(RTLD_NEXT, "connect");
  const char *file = getenv("AZ_BATCH_EMULATOR_TCP_SERVICES");
  if (!file || !*file) return;
  FILE *f = fopen(file, "re");
  if (!f) return;
  char line[1024], addr[64], subnet[512];
  unsigned port, target;
  while (count < 256 && fgets(line, sizeof line, f)) {
    if (sscanf(line, "%63[^\t]\t%u\t%511[^\t]\t%u", addr, &port, subnet, &target) != 4) continue;
    struct in_addr a;
    if (inet_pton(AF_INET, addr, &a) != 1 || port == 0 || port > 65535 || target == 0 || target > 65535) continue;
    services[count].addr = a.s_addr;
    services[count].port = htons((in_port_t)port);
    services[count].target = htons((in_port_t)target);
    snprintf(services[count].subnet, sizeof services[count].subnet, "%s", subnet);
    count++;
  }
  fclose(f);
}

int connect(int fd, const struct sockaddr *sa, socklen_t len) {
  pthread_once(&once, load);
  if (!real_connect) { errno = ENOSYS; return -1; }
  if (!sa || sa->sa_family != AF_INET || len < (socklen_t)sizeof(struct sockaddr_in)) return real_connect(fd, sa, len);
  const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
  const char *mine = getenv("AZ_BATCH_EMULATOR_NODE_SUBNET");
  int known = 0;
  for (int i = 0; i < count; i++) {
    if (services[i].addr != in->sin_addr.s_addr) continue;
    int inside = mine && *mine && strcasecmp(mine, services[i].subnet) == 0;
    if (!inside) { errno = ETIMEDOUT; return -1; }
    known = 1;
    if (services[i].port != in->sin_port) continue;
    struct sockaddr_in to = *in;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = services[i].target;
    return real_connect(fd, (const struct sockaddr *)&to, sizeof to);
  }
  if (known) { errno = ECONNREFUSED; return -1; }
  return real_connect(fd, sa, len);
}
