import type { Versioned } from './types';

let counter = 0;

/** Batch ETags look like `0x8DAC3C1D2E0F1A2`: a hex number that changes on every write. */
export function nextETag(): string {
  counter += 1;
  return '0x8DB' + (Date.now() * 16 + (counter % 16)).toString(16).toUpperCase().padStart(13, '0');
}

export function touch(rec: Versioned): void {
  rec.eTag = nextETag();
  rec.lastModified = new Date();
}
