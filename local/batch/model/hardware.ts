/**
 * The emulated nodes' modelled hardware (docs/local-batch.md "Modelled node hardware"): what the emulated `ibstat`,
 * `ib_write_bw` and `stream` of a node print (local/batch/nodeimage/bin). The emulated fabric is a loopback and the
 * memory the machine's own, so nothing here is measured: a healthy node of a size reports the link rate and port count
 * Azure's health checks expect of that size (AzNHC's figures, shared/core/planning/healthThresholds.ts), an ib_write_bw
 * loopback 2.5% under the link rate and a STREAM 5% over AzNHC's floor; a node fault (faults/faultConfig.ts: a down
 * port, a slow link, low memory bandwidth) changes what that one node reports. CPU count, memory and GPUs are not
 * modelled (`nproc` and /proc/meminfo are the machine's; there is no `nvidia-smi`): the local stack does not judge them.
 * The emulated `lsmod` lists the GPUDirect peer-memory module on the sizes that have it (a fault removes it).
 */
import { healthThresholdsFor } from '../../../shared/core/planning/healthThresholds';
import type { NodeFault } from '../faults/faultConfig';

export interface NodeHardware {
  /** InfiniBand ports, `device:port`. */
  ports: string[];
  state: 'Active' | 'Down';
  physical: 'LinkUp' | 'Polling';
  rateGbps: number;
  /** ib_write_bw loopback, Gb/s. */
  ibWriteGbps: number;
  /** STREAM (each of Copy, Scale, Add, Triad), MB/s; 0 = no figure for the size (the tool prints a modest machine). */
  streamMBps: number;
  /** Whether the emulated `lsmod` lists `nvidia_peermem` (GPUDirect RDMA): on the sizes AzNHC checks it on, unless faulted. */
  peermem: boolean;
}

/** Generic STREAM figure for a size AzNHC has none for (an Ethernet VM: tens of GB/s). */
const GENERIC_STREAM_MBPS = 50_000;

export function nodeHardware(vmSize: string, fault: NodeFault | undefined): NodeHardware {
  const th = healthThresholdsFor(vmSize);
  const ports = th?.ib?.ports ?? [];
  const nominal = th?.ib?.rateGbps ?? 0;
  const down = !!fault?.ibPortDown;
  const rate = down ? 10 : (fault?.ibRateGbps ?? nominal);
  return {
    ports,
    state: down ? 'Down' : 'Active',
    physical: down ? 'Polling' : 'LinkUp',
    rateGbps: rate,
    ibWriteGbps: down ? 0 : Math.round(rate * 0.975 * 100) / 100,
    streamMBps: fault?.streamMBps ?? (th?.streamMBps ? Math.round(th.streamMBps * 1.05) : GENERIC_STREAM_MBPS),
    peermem: th?.gdr === true && !fault?.gdrMissing,
  };
}

/** One line of the hardware map the emulated tools read ($AZ_BATCH_EMULATOR_HARDWARE): tab-separated. */
export function hardwareLine(ip: string, hw: NodeHardware): string {
  return [ip, hw.ports.join(',') || '-', hw.state, hw.physical, hw.rateGbps, hw.ibWriteGbps, hw.streamMBps, hw.peermem ? 1 : 0].join('\t');
}
