export * from './commands';
export * from './rdmaPresets';
export * from './shellQuote';
export * from './shellWords';
