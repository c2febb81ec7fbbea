/**
 * Collects the emulator's request/response exchanges and checks each against the contract, keeping
 * per-operation coverage. Used by the contract and fault tests.
 */
import { createContractValidator, defaultSpecPath, type ContractExchange, type ContractValidator } from './validator';

export interface ContractViolation {
  operationId?: string;
  method: string;
  path: string;
  status?: number;
  problems: string[];
}

export interface ContractRecorder {
  /** Pass as the emulator's `onExchange`. */
  onExchange(exchange: ContractExchange): void;
  /** Exchanges seen so far. */
  count(): number;
  /** The recorded exchanges (kept so tests can show the checks bite on real traffic). */
  exchanges(): ContractExchange[];
  /** Every exchange whose request or response broke the contract. */
  violations(): ContractViolation[];
  /** operationId -> number of exchanges (unmatched ones under "(no operation)"). */
  coverage(): Map<string, number>;
  /** operationId -> status codes seen, e.g. Pool_Get -> [200, 404]. */
  statuses(): Map<string, number[]>;
  /** A printable table of coverage, sorted by operation. */
  report(): string;
}

export function createContractRecorder(validator: ContractValidator = createContractValidator({ specPath: defaultSpecPath() })): ContractRecorder {
  const violations: ContractViolation[] = [];
  const coverage = new Map<string, number>();
  const statuses = new Map<string, Set<number>>();
  const recorded: ContractExchange[] = [];
  return {
    onExchange(exchange) {
      recorded.push(exchange);
      const operationId = validator.matchOperation(exchange.method, exchange.path);
      const key = operationId ?? '(no operation)';
      coverage.set(key, (coverage.get(key) ?? 0) + 1);
      if (exchange.status !== undefined) {
        const set = statuses.get(key) ?? new Set<number>();
        set.add(exchange.status);
        statuses.set(key, set);
      }
      const problems = [...validator.validateRequest(exchange), ...validator.validateResponse(exchange)];
      if (problems.length) violations.push({ operationId, method: exchange.method, path: exchange.path, status: exchange.status, problems });
    },
    count: () => recorded.length,
    exchanges: () => [...recorded],
    violations: () => [...violations],
    coverage: () => new Map(coverage),
    statuses: () => new Map([...statuses].map(([k, v]) => [k, [...v].sort((a, b) => a - b)])),
    report() {
      const rows = [...coverage.keys()].sort().map((op) => {
        const codes = [...(statuses.get(op) ?? [])].sort((a, b) => a - b).join(',');
        return `  ${op.padEnd(42)} ${String(coverage.get(op)).padStart(4)}  [${codes}]`;
      });
      return `${coverage.size} operations, ${recorded.length} exchanges, ${violations.length} violations\n${rows.join('\n')}`;
    },
  };
}
