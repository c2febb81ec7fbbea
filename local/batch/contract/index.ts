export { createContractValidator, defaultSpecPath, SPEC_FILE } from './validator';
export type { ContractExchange, ContractValidator, ContractValidatorOptions, OperationDescription, QueryParameterSpec } from './validator';
export { LATER_REVISION_PROPERTIES } from './swaggerToJsonSchema';
export { createContractRecorder, type ContractRecorder, type ContractViolation } from './recorder';
