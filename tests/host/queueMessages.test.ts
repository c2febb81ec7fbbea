import { decodeMessageText, encodeMessage, outputMessages } from '../../local/host/triggers/queueMessages';
import { queueOptions } from '../../local/host/triggers/queueOptions';
import { parseTimeSpan } from '../../local/host/hostJson';

describe('queue message encoding', () => {
  it('round-trips text through base64 and leaves it alone with "none"', () => {
    expect(encodeMessage('{"a":"é"}', 'base64')).toBe(Buffer.from('{"a":"é"}').toString('base64'));
    expect(decodeMessageText(encodeMessage('{"a":"é"}', 'base64'), 'base64')).toBe('{"a":"é"}');
    expect(encodeMessage('plain', 'none')).toBe('plain');
    expect(decodeMessageText('plain text', 'none')).toBe('plain text');
    expect(() => decodeMessageText('not base64!', 'base64')).toThrow(/not valid base64/);
  });

  it('turns output binding values into messages: arrays are several', () => {
    expect(outputMessages({ string: 'one' })).toEqual(['one']);
    expect(outputMessages({ json: '{"a":1}' })).toEqual(['{"a":1}']);
    expect(outputMessages({ json: '[{"a":1},"two",3]' })).toEqual(['{"a":1}', 'two', '3']);
    expect(outputMessages({ int: 5 })).toEqual(['5']);
  });
});

describe('host.json queue options', () => {
  it('uses the extension defaults and validates values', () => {
    const d = queueOptions({});
    expect(d).toMatchObject({ batchSize: 16, maxDequeueCount: 5, messageEncoding: 'base64', visibilityTimeoutMs: 0, maxPollingIntervalMs: 60_000 });
    const o = queueOptions({ extensions: { queues: { maxPollingInterval: '00:00:02', visibilityTimeout: '00:00:05', batchSize: 8, newBatchThreshold: 1, messageEncoding: 'none' } } });
    expect(o).toEqual({ maxPollingIntervalMs: 2000, visibilityTimeoutMs: 5000, batchSize: 8, newBatchThreshold: 1, maxDequeueCount: 5, messageEncoding: 'none' });
    expect(() => queueOptions({ extensions: { queues: { batchSize: 64 } } })).toThrow(/batchSize must be an integer in \[1, 32\]/);
    expect(parseTimeSpan('1.02:03:04.5', 'x')).toBe(((24 + 2) * 3600 + 3 * 60 + 4.5) * 1000);
    expect(() => parseTimeSpan('5 minutes', 'x')).toThrow(/TimeSpan/);
  });
});
