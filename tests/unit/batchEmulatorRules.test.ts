/**
 * The Batch emulator's pure rules: which exit options apply to a completed task, how a schema error becomes
 * Batch's error with the property path, which $filter a list takes, and $VAR expansion in output file patterns.
 */
import type { ErrorObject } from 'ajv';
import { checkAutoScale, checkMinimumDuration, checkResourceFiles } from '../../local/batch/handlers/rules';
import { bodyError, propertyPath } from '../../local/batch/handlers/requestChecks';
import { exitOptionsFor } from '../../local/batch/model/exitOptions';
import { JOB_FILTERS, TASK_FILTERS } from '../../local/batch/model/filterable';
import { matches, parseFilter } from '../../local/batch/model/odata';
import type { TaskRecord } from '../../local/batch/model/types';
import { expandVariables } from '../../local/batch/runner/outputFiles';

type Outcome = Pick<TaskRecord, 'spec' | 'executionInfo'>;
const task = (exitConditions: unknown, exitCode: number | undefined, failureCode?: string): Outcome => ({
  spec: exitConditions ? { exitConditions } : {},
  executionInfo: {
    retryCount: 0,
    requeueCount: 0,
    exitCode,
    result: failureCode || exitCode !== 0 ? 'failure' : 'success',
    failureInfo: failureCode ? { category: 'usererror', code: failureCode } : undefined,
  },
});

describe('exitOptionsFor', () => {
  const conditions = {
    exitCodes: [
      { code: 0, exitOptions: { jobAction: 'disable' } },
      { code: 3, exitOptions: { jobAction: 'none', dependencyAction: 'satisfy' } },
    ],
    exitCodeRanges: [{ start: 2, end: 9, exitOptions: { jobAction: 'terminate' } }],
    preProcessingError: { jobAction: 'none' },
    fileUploadError: { dependencyAction: 'satisfy' },
    default: { jobAction: 'disable' },
  };

  test.each([
    ['a listed exit code wins over a range', task(conditions, 3), { jobAction: 'none', dependencyAction: 'satisfy' }],
    ['a range', task(conditions, 5), { jobAction: 'terminate', dependencyAction: 'block' }],
    ['a listed success', task(conditions, 0), { jobAction: 'disable', dependencyAction: 'satisfy' }],
    ['an unlisted failure takes default', task(conditions, 42), { jobAction: 'disable', dependencyAction: 'block' }],
    ['a pre-processing failure', task(conditions, undefined, 'BlobDownloadMiscError'), { jobAction: 'none', dependencyAction: 'block' }],
    [
      'a file upload failure after exit 0',
      task({ ...conditions, exitCodes: [] }, 0, 'FileUploadContainerNotFound'),
      { jobAction: 'terminate', dependencyAction: 'satisfy' },
    ],
    ['a file upload failure after a listed exit code', task(conditions, 3, 'FileUploadAccessDenied'), { jobAction: 'none', dependencyAction: 'satisfy' }],
    ['no exitConditions, success', task(undefined, 0), { jobAction: 'none', dependencyAction: 'satisfy' }],
    ['no exitConditions, failure', task(undefined, 1), { jobAction: 'terminate', dependencyAction: 'block' }],
  ])('%s', (_what, t, expected) => {
    expect(exitOptionsFor(t)).toEqual(expected);
  });
});

describe('schema errors as Batch errors', () => {
  const err = (keyword: string, instancePath: string, params: Record<string, unknown>, message = 'must be integer'): ErrorObject => ({
    keyword,
    instancePath,
    params,
    message,
    schemaPath: '',
  });

  test('paths read like the handlers name properties', () => {
    expect(propertyPath(['value', '1', 'constraints', 'maxTaskRetryCount'])).toBe('value[1].constraints.maxTaskRetryCount');
    expect(propertyPath(['startTask', 'resourceFiles', '0'])).toBe('startTask.resourceFiles[0]');
  });

  test('unknown, missing and invalid properties get UnsupportedProperty, MissingRequiredProperty and InvalidPropertyValue', () => {
    const body = { startTask: { maxTaskRetryCount: 'x' } };
    const unknown = bodyError(err('additionalProperties', '/startTask', { additionalProperty: 'runElevated' }), body);
    expect([unknown.status, unknown.code, unknown.values]).toEqual([400, 'UnsupportedProperty', [{ key: 'PropertyName', value: 'startTask.runElevated' }]]);
    expect(bodyError(err('required', '/startTask', { missingProperty: 'commandLine' }), body).code).toBe('MissingRequiredProperty');
    const invalid = bodyError(err('type', '/startTask/maxTaskRetryCount', { type: 'integer' }), body);
    expect(invalid.code).toBe('InvalidPropertyValue');
    expect(invalid.values).toEqual([
      { key: 'PropertyName', value: 'startTask.maxTaskRetryCount' },
      { key: 'PropertyValue', value: 'x' },
      { key: 'Reason', value: 'must be integer' },
    ]);
    expect(bodyError(err('type', '', { type: 'object' }, 'must be object'), []).code).toBe('InvalidRequestBody');
  });
});

describe('$filter on the properties a list takes', () => {
  test('lastModifiedTime filters tasks on lastModified; operators are the ones listed', () => {
    const f = parseFilter("lastModifiedTime ge datetime'2026-01-01T00:00:00Z' and executionInfo/result eq 'failure'", TASK_FILTERS);
    expect(matches(f, { lastModified: '2026-02-01T00:00:00.000Z', executionInfo: { result: 'Failure' } })).toBe(true);
    expect(matches(f, { lastModified: '2025-12-31T00:00:00.000Z', executionInfo: { result: 'failure' } })).toBe(false);
    expect(() => parseFilter("startswith(state,'act')", TASK_FILTERS)).toThrow(/state does not take the operator startswith/);
    expect(() => parseFilter("displayName eq 'x'", JOB_FILTERS)).toThrow(/cannot be filtered on displayName/);
  });
});

describe('documented rules', () => {
  test('resizeTimeout minimum, autoscale combinations and resource file sources', () => {
    expect(() => checkMinimumDuration({ resizeTimeout: 'PT5M' }, 'resizeTimeout', 5 * 60_000)).not.toThrow();
    expect(() => checkMinimumDuration({ resizeTimeout: 'PT299S' }, 'resizeTimeout', 5 * 60_000)).toThrow(/invalid/);
    expect(() => checkAutoScale({ targetDedicatedNodes: 0 })).not.toThrow();
    expect(() => checkAutoScale({ targetLowPriorityNodes: 2 })).not.toThrow();
    expect(() => checkAutoScale({})).toThrow(expect.objectContaining({ code: 'MissingRequiredProperty' }));
    expect(() => checkAutoScale({ enableAutoScale: true, autoScaleFormula: 'x', targetLowPriorityNodes: 1 })).toThrow(
      expect.objectContaining({ code: 'InvalidAutoScalingSettings' }),
    );
    expect(() => checkAutoScale({ enableAutoScale: true, autoScaleFormula: 'x', autoScaleEvaluationInterval: 'PT4M' })).toThrow(
      expect.objectContaining({ code: 'InvalidPropertyValue' }),
    );
    expect(() => checkAutoScale({ enableAutoScale: true, autoScaleFormula: 'x' })).toThrow(expect.objectContaining({ status: 501 }));
    expect(() =>
      checkResourceFiles(
        [
          { storageContainerUrl: 'https://a/c', filePath: 'in' },
          { httpUrl: 'https://a/c/b', filePath: 'sub/../b' },
        ],
        'resourceFiles',
      ),
    ).not.toThrow();
    expect(() => checkResourceFiles([{ httpUrl: 'https://a/c/b', filePath: '/etc/b' }], 'resourceFiles')).toThrow(
      expect.objectContaining({ values: expect.arrayContaining([{ key: 'PropertyName', value: 'resourceFiles[0].filePath' }]) }),
    );
  });
});

describe('output file patterns', () => {
  test('$VAR and ${VAR} expand from the task environment; unknown variables are empty', () => {
    expect(expandVariables('$OUT/${NAME}.txt', { OUT: 'results', NAME: 'run1' })).toBe('results/run1.txt');
    expect(expandVariables('$MISSING/x', {})).toBe('/x');
  });
});
