export { readImageConfig, RegistryError, type ImageConfigRead, type ReadImageConfigOptions, type RegistryAuth, type RegistryErrorKind } from './client';
export { parseImageReference, type ImageReference } from './reference';
export { MANIFEST_ACCEPT, MEDIA_TYPES } from './manifest';
export { readImageEvidence, type ImageEvidenceDeps } from './evidence';
