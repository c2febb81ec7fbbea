export * from './backoff';
export * from './errors';
export * from './hash';
export * from './pullWindow';
export * from './shards';
export * from './stagingModel';
