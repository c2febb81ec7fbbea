/**
 * The emulated node's NIC (emulator only). Emulated nodes share one machine, so a copy between two of them would run
 * at memory speed; the Batch emulator gives every node `AZ_BATCH_EMULATOR_NODE_BANDWIDTH` (bytes per second, each
 * direction) and the tools that move bulk data between nodes (`docker save` on the sending node, `docker load` on
 * the receiving one) pace their stream through this module. A node's concurrent flows in one direction share its
 * budget: each flow registers a file under `$AZ_BATCH_NODE_ROOT_DIR/.emulator-network/<direction>/` and paces itself
 * at cap ÷ live flows, recounted every 200 ms. Without the variable, streams are not paced.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { processAlive } from './processAlive';

export type Direction = 'egress' | 'ingress';

export function nodeBandwidth(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const v = Number(env.AZ_BATCH_EMULATOR_NODE_BANDWIDTH);
  return Number.isFinite(v) && v > 0 ? v : undefined;
}

class Flow {
  private readonly file: string;
  private flows = 1;
  private countedAt = 0;

  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    this.file = path.join(dir, String(process.pid));
    writeFileSync(this.file, '');
  }

  /** Live flows in this direction on this node (a flow whose process is gone no longer counts). */
  live(now: number): number {
    if (now - this.countedAt < 200) return this.flows;
    this.countedAt = now;
    let n = 0;
    for (const f of readdirSync(this.dir)) {
      const pid = Number(f);
      if (pid === process.pid || (Number.isSafeInteger(pid) && processAlive(pid))) n++;
      else rmSync(path.join(this.dir, f), { force: true });
    }
    this.flows = Math.max(1, n);
    return this.flows;
  }

  close(): void {
    rmSync(this.file, { force: true });
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function write(out: Writable, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    out.write(chunk, (err) => (err ? reject(err) : resolve()));
  });
}

/**
 * Copies `input` to `output` at this node's share of its NIC cap in `direction` (unpaced when no cap is set). Returns
 * the bytes copied. The output is not ended (stdout must not be).
 */
export async function pacedCopy(input: Readable, output: Writable, direction: Direction, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const cap = nodeBandwidth(env);
  const root = env.AZ_BATCH_NODE_ROOT_DIR;
  const flow = cap && root ? new Flow(path.join(root, '.emulator-network', direction)) : undefined;
  let bytes = 0;
  // A virtual clock: the time the bytes sent so far may be done by at the current share.
  let due = Date.now();
  try {
    for await (const c of input) {
      const chunk = c as Buffer;
      if (flow && cap) {
        const now = Date.now();
        due = Math.max(due, now - 50) + (chunk.length / (cap / flow.live(now))) * 1000;
        if (due > now) await sleep(due - now);
      }
      await write(output, chunk);
      bytes += chunk.length;
    }
  } finally {
    flow?.close();
  }
  return bytes;
}
