/**
 * Draws the stage rows of a job while `watch` polls it: live bars (cli-progress) on a terminal, and one
 * plain line per change otherwise (pipes, CI logs, tests), so the output stays readable when captured.
 */
// Types only here: cli-progress is loaded when there is a terminal to draw on (createProgressDisplay).
import type { MultiBar, Presets, SingleBar } from 'cli-progress';
import type { JobView } from './apiClient';
import { queueText, statusLine } from './format';
import { stageRows, type StageRow } from './stageRows';

export interface ProgressDisplay {
  update(view: JobView): void;
  stop(): void;
}

type Write = (text: string) => void;

export async function createProgressDisplay(stream: NodeJS.WriteStream, write: Write = (t) => stream.write(t)): Promise<ProgressDisplay> {
  return stream.isTTY ? new BarDisplay(stream, await import('cli-progress')) : new LineDisplay(write);
}

class LineDisplay implements ProgressDisplay {
  private last = '';
  constructor(private readonly write: Write) {}

  update(view: JobView): void {
    const line = statusLine(view).trimEnd();
    if (line === this.last) return;
    this.last = line;
    this.write(`${line}\n`);
  }

  stop(): void {}
}

class BarDisplay implements ProgressDisplay {
  private readonly multi: MultiBar;
  private readonly bars = new Map<StageRow['key'], SingleBar>();
  private readonly header: SingleBar;

  constructor(stream: NodeJS.WriteStream, bars: { MultiBar: typeof MultiBar; Presets: typeof Presets }) {
    this.multi = new bars.MultiBar(
      { stream, clearOnComplete: false, hideCursor: true, format: ' {label} {bar} {value}/{total} {note}', barsize: 24, autopadding: true },
      bars.Presets.shades_classic,
    );
    this.header = this.multi.create(1, 0, { label: '', note: '' }, { format: ' {label}' });
  }

  update(view: JobView): void {
    const queue = queueText(view);
    this.header.update(0, { label: `${view.id}: ${view.state}${queue ? ` ${queue}` : ''}${view.progress?.lastError ? ` (${view.progress.lastError})` : ''}` });
    for (const row of stageRows(view)) {
      const payload = { label: row.label.padEnd(15), note: row.note };
      let bar = this.bars.get(row.key);
      if (!bar) {
        bar = this.multi.create(row.total, row.done, payload);
        this.bars.set(row.key, bar);
      } else {
        bar.setTotal(row.total);
        bar.update(row.done, payload);
      }
    }
  }

  stop(): void {
    this.multi.stop();
  }
}
