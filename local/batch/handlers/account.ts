/**
 * The account's listings on the data plane: Account_ListSupportedImages (`GET /supportedimages`), answered from the
 * emulator's catalog (model/catalog.ts) with $filter on the properties Batch documents for it (osType,
 * verificationType, nodeAgentSKUId with eq/ne: "OData filters in Azure Batch", list supported images) and paging.
 */
import { CATALOG_IMAGES } from '../model/catalog';
import type { Filterable } from '../model/filterable';
import { pageOf } from '../model/odata';
import type { Json } from '../model/types';
import type { Handler } from './http';

export const SUPPORTED_IMAGE_FILTERS: Filterable = {
  osType: { ops: ['eq', 'ne'] },
  verificationType: { ops: ['eq', 'ne'] },
  nodeAgentSKUId: { ops: ['eq', 'ne'] },
};

const listSupportedImages: Handler = (ctx) => {
  const all = CATALOG_IMAGES.map((i) => JSON.parse(JSON.stringify(i)) as Json);
  return { status: 200, body: pageOf(all, ctx.query, ctx.baseUrl, '/supportedimages', SUPPORTED_IMAGE_FILTERS) };
};

export const accountRoutes: [string, string, Handler][] = [['GET', 'supportedimages', listSupportedImages]];
