import type { ChaosProgress } from '../chaos/ChaosReport.js';

/** A one-line progress display. */
export type ProgressBar = {
  update(progress: ChaosProgress): void;
  /** Erases the line, so what is printed next starts clean. */
  clear(): void;
};

/** Redraws at most this often: progress comes with every attempt. */
const REDRAW_MS = 100;
const WIDTH = 24;

/**
 * A progress bar redrawn in place on `stream` (a TTY: it relies on `\r` and an erase-line
 * escape). The caller decides whether to show one at all.
 */
export function createProgressBar(stream: NodeJS.WriteStream): ProgressBar {
  let drawnAt = 0;
  let drawn = false;
  let lastPhase: ChaosProgress['phase'] | null = null;
  return {
    update(progress) {
      const now = Date.now();
      // A phase change is drawn at once: the last one may take seconds.
      if (progress.phase === lastPhase && now - drawnAt < REDRAW_MS) return;
      drawnAt = now;
      lastPhase = progress.phase;
      const share = progress.total === 0 ? 1 : progress.ended / progress.total;
      const filled = Math.round(share * WIDTH);
      const line =
        `[${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${progress.ended}/${progress.total}` +
        ` ${progress.phase}  attempts ${progress.attempts}  crashes ${progress.crashes}` +
        `  kills ${progress.kills}`;
      stream.write(`\r\x1b[2K${line.slice(0, Math.max(10, (stream.columns || 80) - 1))}`);
      drawn = true;
    },
    clear() {
      if (drawn) stream.write('\r\x1b[2K');
      drawn = false;
    },
  };
}
