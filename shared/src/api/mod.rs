//! The HTTP API's pure parts: JSON errors naming the field, request decoding, job filters and
//! pages, and the operator's actions.

pub mod api_error;
pub mod bulk_request;
pub mod field_error;
pub mod job_filter;
pub mod operator_action;
pub mod page_cursor;
pub mod route;
