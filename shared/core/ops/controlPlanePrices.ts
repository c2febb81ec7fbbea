/**
 * Dated fallback prices for the control plane's own cost (Flex Consumption compute and storage transactions), pay-as-you-go,
 * USD, East US list prices as published on azure.microsoft.com/pricing (Azure Functions, Table Storage, Queue Storage, Blob
 * Storage pages) and as quoted on the date below. Nothing here is fetched: a later loader may replace these with the Retail
 * Prices API's figures (https://prices.azure.com/api/retail/prices) and keep this table only as the fallback. Every consumer
 * shows `asOf` and `source` next to the figure, so a stale table is visible rather than silently wrong.
 */
export interface ControlPlanePrices {
  /** Day the figures were copied (YYYY-MM-DD). */
  asOf: string;
  source: string;
  currency: string;
  region: string;
  /** True while these are the constants below rather than prices loaded at run time. */
  fallback: boolean;
  /** Flex Consumption, on-demand: per GB-second of instance memory while executing (free grant ignored: worst case). */
  flexOnDemandPerGbSecond: number;
  /** Flex Consumption, on-demand: per execution (the list price is per million). */
  flexOnDemandPerExecution: number;
  /** Instance memory the app is deployed with (Flex Consumption instance sizes are 512 MB, 2,048 MB, 4,096 MB). */
  flexInstanceMemoryGb: number;
  /** Storage transactions, per single transaction (list prices are per 10,000), Standard GPv2 LRS. */
  storagePerTransaction: { table: number; queue: number; blobWrite: number; blobRead: number };
}

export const CONTROL_PLANE_PRICES: ControlPlanePrices = {
  asOf: '2026-11-27',
  source:
    'dated fallback: azure.microsoft.com/pricing/details/functions (Flex Consumption on demand: $0.000026/GB-s, $0.40 per million executions), ' +
    '/storage/tables ($0.00036 per 10,000 transactions, LRS), /storage/queues (GPv2 LRS class 1: $0.004 per 10,000), ' +
    '/storage/blobs (hot LRS: write $0.055, read $0.0044 per 10,000)',
  currency: 'USD',
  region: 'eastus',
  fallback: true,
  flexOnDemandPerGbSecond: 0.000026,
  flexOnDemandPerExecution: 0.4 / 1_000_000,
  flexInstanceMemoryGb: 2.048,
  storagePerTransaction: { table: 0.00036 / 10_000, queue: 0.004 / 10_000, blobWrite: 0.055 / 10_000, blobRead: 0.0044 / 10_000 },
};
