/**
 * The node health checks' shell part (docs/pipeline.md "Node health checks"): what each node runs, inside the
 * preflight probe (preflightScript.ts, `mjpf_probe`), to measure itself with the tools Azure's HPC images carry and
 * AzNHC uses (github.com/Azure/azurehpc-health-checks): `nproc`, /proc/meminfo, `ibstat`, `ib_write_bw` (perftest)
 * loopback per InfiniBand device, `stream`, `nvidia-smi`, the peer-memory module (`lsmod`), syslog's "lost carrier"
 * lines of the last 24 h; and the site's own check.
 *
 * Each check is an argument of the probe (`health:<check>`, `site:<base64 script>`, `siteimage:<P|U>:<base64 image>`)
 * and prints one line per figure, `health <check> <figures>`, which shared/core/planning/health.ts parses and judges. A
 * tool that is not on the node prints `health <check> notool=<tool>`: recorded, not judged (the image lacks it, not
 * the node). Like the rest of the probe, nothing here holds a single quote (it is quoted again at every level).
 */
import type { HealthCheck } from '../spec/sections/preflight';
import { LINK_FLAP_WINDOW_HOURS } from '../planning/healthThresholds';

/** How long each measurement may take on a node (the check's wall clock is the spec's preflight.timeout). */
export const HEALTH_TIMEOUTS = { ibWriteSeconds: 5, siteScriptSeconds: 120, siteImageSeconds: 300 } as const;

/** AzNHC's ib_write_bw arguments (azure_ib_write_bw_non_gdr.nhc), with a 5 s run instead of its 10 s. */
const IB_WRITE_BW_ARGS = `-s 1048576 -D ${HEALTH_TIMEOUTS.ibWriteSeconds} -x 0 -F --report_gbits -q 2`;

/** The InfiniBand ports as `ibstat` prints them: `<ca>:<port> <state> <physical state> <rate>`, InfiniBand link layer only. */
const IBSTAT_PORTS_AWK =
  'awk "/^CA /{ca=\\$2; gsub(/[^A-Za-z0-9_]/,\\"\\",ca)} /^[ \\t]*Port [0-9]+:/{p=\\$2; sub(/:/,\\"\\",p)} /^[ \\t]*State:/{st=\\$2} /Physical state:/{ph=\\$3} /^[ \\t]*Rate:/{r=\\$2} /Link layer: InfiniBand/{print ca \\":\\" p \\" \\" st \\" \\" ph \\" \\" r}"';

/**
 * The case arms `mjpf_probe` adds for the health arguments (its loop variable is `$p`). Each ends in `;;`.
 */
export function healthProbeCases(): string {
  const have = (tool: string) => `command -v ${tool} >/dev/null 2>&1`;
  return [
    'health:cpu) echo "health cpu $(nproc 2>/dev/null || echo unknown)";;',
    'health:memory) echo "health memory $(awk "/^MemTotal:/{print \\$2}" /proc/meminfo 2>/dev/null)";;',
    `health:ib) if ${have('ibstat')}; then mjpf_o=$(ibstat 2>/dev/null | ${IBSTAT_PORTS_AWK}); if [ -n "$mjpf_o" ]; then printf "%s\\n" "$mjpf_o" | sed "s/^/health ib /"; else echo "health ib none"; fi; else echo "health ib notool=ibstat"; fi;;`,
    // Loopback: a server and a client on the same device, the client's 1 MiB line carries the average Gb/s (field 4).
    `health:ibbw) if ${have('ib_write_bw')} && ${have('ibstat')}; then for mjpf_d in $(ibstat 2>/dev/null | ${IBSTAT_PORTS_AWK} | cut -d: -f1 | sort -u); do ` +
      `timeout 30 ib_write_bw -d "$mjpf_d" ${IB_WRITE_BW_ARGS} >/dev/null 2>&1 & sleep 1; ` +
      `mjpf_g=$(timeout 30 ib_write_bw -d "$mjpf_d" ${IB_WRITE_BW_ARGS} localhost 2>/dev/null | awk "\\$1==1048576{print \\$4; exit}"); wait; ` +
      'echo "health ibbw $mjpf_d ${mjpf_g:-failed}"; done; else echo "health ibbw notool=ib_write_bw"; fi;;',
    `health:stream) if ${have('stream')}; then echo "health stream$(stream 2>/dev/null | awk "/^(Copy|Scale|Add|Triad):/{sub(/:/,\\"\\",\\$1); printf \\" %s=%s\\", \\$1, \\$2}")"; else echo "health stream notool=stream"; fi;;`,
    `health:gpu) if ${have('nvidia-smi')}; then echo "health gpu $(nvidia-smi --list-gpus 2>/dev/null | grep -c ^GPU)"; else echo "health gpu notool=nvidia-smi"; fi;;`,
    // GPUDirect RDMA as AzNHC's azure_gdr_detect.nhc tells it: the peer-memory ABI registered, or the module listed.
    `health:gdr) if [ -d /sys/kernel/mm/memory_peers ]; then echo "health gdr peermem memory_peers"; elif ${have('lsmod')}; then mjpf_m=$(lsmod 2>/dev/null | awk "\\$1==\\"nvidia_peermem\\" || \\$1==\\"nv_peer_mem\\" {print \\$1; exit}"); if [ -n "$mjpf_m" ]; then echo "health gdr peermem $mjpf_m"; else echo "health gdr none"; fi; else echo "health gdr notool=lsmod"; fi;;`,
    // Only the lost-carrier events of the last LINK_FLAP_WINDOW_HOURS (a flap last month is no reason to replace a
    // node today): each line's time, as syslog writes it (RFC 3339, or the traditional "Mmm dd hh:mm:ss" of this
    // year), read by date(1). /var/log/messages where there is no syslog file (AlmaLinux), as AzNHC does.
    // MJPF_SYSLOG: another file (the emulator's and the tests' nodes; never set on Azure).
    `health:linkflap) mjpf_f=\${MJPF_SYSLOG:-/var/log/syslog}; [ -r "$mjpf_f" ] || mjpf_f=/var/log/messages; if [ -r "$mjpf_f" ]; then mjpf_c=$(( $(date +%s) - ${LINK_FLAP_WINDOW_HOURS * 3600} )); mjpf_n=0; while IFS= read -r mjpf_fl; do if [[ $mjpf_fl =~ ^[0-9]{4}- ]]; then mjpf_ts=\${mjpf_fl%% *}; else mjpf_ts=\${mjpf_fl:0:15}; fi; mjpf_t=$(date -d "$mjpf_ts" +%s 2>/dev/null) || continue; if [ "$mjpf_t" -ge "$mjpf_c" ]; then mjpf_n=$((mjpf_n + 1)); fi; done < <(grep -i "lost carrier" "$mjpf_f" 2>/dev/null | grep -E "ib[0-9A-Za-z_]+"); echo "health linkflap $mjpf_n"; else echo "health linkflap notool=/var/log/syslog"; fi;;`,
    // The site's script: its exit status and its last line (the reason), cut to 200 characters.
    // The node's task working directory (where `files` land on every node), sent by the master as its own path and
    // rebased on this node's root: an ssh session starts in the home directory, not there.
    'taskwd:*) mjpf_wd=${p#taskwd:}; mjpf_wd=${AZ_BATCH_NODE_ROOT_DIR:-$r}${mjpf_wd#"$r"};;',
    // Docker jobs: the checks ran on the node's host in the coordination step (hostHealthScript), whose lines wait
    // in the working directory the container shares with it.
    `hosthealth) if [ -r "\${mjpf_wd:-.}/${HOST_HEALTH_FILE}" ]; then grep "^health " "\${mjpf_wd:-.}/${HOST_HEALTH_FILE}"; else echo "health host none"; fi;;`,
    // The site's script runs in the task's working directory, so a script it calls from `files` is found on every node.
    `site:*) mjpf_s=$(printf %s "\${p#site:}" | base64 -d 2>/dev/null); mjpf_o=$(cd "\${mjpf_wd:-.}" 2>/dev/null; timeout ${HEALTH_TIMEOUTS.siteScriptSeconds} bash -c "$mjpf_s" 2>&1 </dev/null); mjpf_r=$?; echo "health site $mjpf_r $(printf %s "$mjpf_o" | tail -n 1 | tr -d "\\r" | cut -c1-200)";;`,
    `siteimage:*) p=\${p#siteimage:}; mjpf_x=; [ "\${p%%:*}" = P ] && mjpf_x=--privileged; mjpf_s=$(printf %s "\${p#*:}" | base64 -d 2>/dev/null); if ${have('docker')}; then mjpf_o=$(timeout ${HEALTH_TIMEOUTS.siteImageSeconds} docker run --rm --network host $mjpf_x "$mjpf_s" 2>&1 </dev/null); mjpf_r=$?; echo "health site $mjpf_r $(printf %s "$mjpf_o" | tail -n 1 | tr -d "\\r" | cut -c1-200)"; else echo "health site notool=docker"; fi;;`,
  ].join(' ');
}

export interface SiteCheck {
  script?: string;
  image?: string;
  privileged?: boolean;
}

/** The probe's health arguments: the checks to run and the site's check (base64, so any text passes every quoting level). */
export function healthProbeArgs(checks: readonly HealthCheck[], site?: SiteCheck): string[] {
  const args = checks.filter((c) => c !== 'site').map((c) => `health:${c}`);
  if (site && checks.includes('site')) {
    if (site.script !== undefined) args.push(`site:${Buffer.from(site.script, 'utf8').toString('base64')}`);
    else if (site.image !== undefined) args.push(`siteimage:${site.privileged ? 'P' : 'U'}:${Buffer.from(site.image, 'utf8').toString('base64')}`);
  }
  return args;
}

/** What a health argument may look like (the probe's other arguments are paths, preflightScript.ts SAFE_PATH). */
export const HEALTH_ARG = /^(health:[a-z]+|site:[A-Za-z0-9+/=]+|siteimage:[PU]:[A-Za-z0-9+/=]+|hosthealth)$/;

/** Where a docker job's node keeps the lines of the checks its host ran (in the task's working directory). */
export const HOST_HEALTH_FILE = 'mpijob-host-health.txt';

/**
 * Docker jobs: the checks run on the node's host, not in the job's container (the tools, ibstat, perftest, STREAM,
 * nvidia-smi, lsmod, syslog and docker itself, are the host image's; in the container they are missing and every check
 * would be skipped as "not on the node"). Run in the preflight task's coordination step on every node, before the
 * container starts, in the task's working directory; the probe in the container reads the lines back (`hosthealth`).
 * Never fails the coordination step: a check that printed nothing is judged "no answer".
 */
export function hostHealthScript(args: readonly string[]): string {
  for (const a of args)
    if (!HEALTH_ARG.test(a) || a === 'hosthealth')
      throw new Error(`preflight: host health argument ${JSON.stringify(a.slice(0, 40))} is not health:<check>, site:<base64> or siteimage:<P|U>:<base64>`);
  return `mjpf_hh() { local r="\${AZ_BATCH_NODE_ROOT_DIR:-$PWD}" p; for p in "$@"; do case $p in ${healthProbeCases()} *) ;; esac; done; true; }; { mjpf_hh ${args.join(' ')} > ${HOST_HEALTH_FILE} 2>&1; } || true`;
}
