// @cf-jobs/client: the platform's HTTP API, typed from its OpenAPI document, and the check of
// its signed deliveries for app endpoints. See README.md beside this package.
export { JobsApiError, JobsClient } from "./client.js";
export type {
  Artifact,
  BulkResult,
  ClientOptions,
  DeadLetterPage,
  EnqueueRequest,
  EnqueueResult,
  Failure,
  Filter,
  History,
  Job,
  JobPage,
  JobStatus,
  JobSummary,
  Selection,
  Stats,
  WaitOptions,
} from "./client.js";
export { SIGNATURE_HEADER, signedBytes, signTestDelivery, verifyDelivery } from "./delivery.js";
export type { DeliveredJob, DeliveryCheck, DeliveryRefusal, TestDelivery, VerifyOptions } from "./delivery.js";
export type { components, paths } from "./openapi.js";
