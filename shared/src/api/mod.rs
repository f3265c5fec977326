//! The HTTP API's pure parts: routes, job filters and pages, bulk requests and the operator's
//! actions (their errors and decoding are `request`'s).

pub mod bulk_request;
pub mod job_filter;
pub mod operator_action;
pub mod page_cursor;
pub mod route;
