import { PollingBackoff } from '../../local/host/triggers/pollingBackoff';
import { decodeMessageText, encodeMessage, outputMessages } from '../../local/host/triggers/queueMessages';
import { queueOptions } from '../../local/host/triggers/queueOptions';
import { hostJsonLogLevel, parseTimeSpan } from '../../local/host/hostJson';

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
    const o = queueOptions({
      extensions: { queues: { maxPollingInterval: '00:00:02', visibilityTimeout: '00:00:05', batchSize: 8, newBatchThreshold: 1, messageEncoding: 'none' } },
    });
    expect(o).toEqual({
      maxPollingIntervalMs: 2000,
      visibilityTimeoutMs: 5000,
      batchSize: 8,
      newBatchThreshold: 1,
      maxDequeueCount: 5,
      messageEncoding: 'none',
    });
    expect(() => queueOptions({ extensions: { queues: { batchSize: 64 } } })).toThrow(/batchSize must be an integer in \[1, 32\]/);
    expect(parseTimeSpan('1.02:03:04.5', 'x')).toBe(((24 + 2) * 3600 + 3 * 60 + 4.5) * 1000);
    expect(() => parseTimeSpan('5 minutes', 'x')).toThrow(/TimeSpan/);
  });
});

describe('queue polling backoff', () => {
  it('grows while the queue is empty, never past the max, and resets on a message', () => {
    const fixed = new PollingBackoff(100, 2000, () => 0.5); // factor 2
    expect([1, 2, 3, 4, 5, 6].map(() => fixed.nextEmpty())).toEqual([100, 200, 400, 800, 1600, 2000]);
    fixed.reset();
    expect(fixed.nextEmpty()).toBe(100);
    const random = new PollingBackoff(100, 500);
    for (let i = 0; i < 50; i++) {
      const d = random.nextEmpty();
      expect(d).toBeGreaterThanOrEqual(100);
      expect(d).toBeLessThanOrEqual(500);
    }
    expect(() => new PollingBackoff(0, 10)).toThrow(/0 < min <= max/);
  });
});

describe('host.json logging level', () => {
  it('maps the default category level to pino', () => {
    expect(hostJsonLogLevel({})).toBe('info');
    expect(hostJsonLogLevel({ logging: { logLevel: { default: 'Warning' } } })).toBe('warn');
    expect(hostJsonLogLevel({ logging: { logLevel: { default: 'None' } } })).toBe('silent');
    expect(() => hostJsonLogLevel({ logging: { logLevel: { default: 'Loud' } } })).toThrow(/logLevel.default/);
  });
});
