//! What a job is: its type registry and payloads, its family, the state machine every path
//! goes through, enqueue validation, chains, the queue message and what an attempt leads to.

pub mod callback;
pub mod chain;
pub mod defined_types;
pub mod enqueue;
pub mod envelope;
pub mod family;
pub mod flow_control;
pub mod ids;
pub mod job_outcome;
pub mod job_type;
pub mod lease;
pub mod lifecycle;
pub mod pause;
pub mod payload_schema;
pub mod payloads;
pub mod registry;
pub mod run_details;
pub mod stored_result;
pub mod target;
pub mod type_definition;
pub mod workflow_group;
pub mod workflow_step;
pub mod workflow_wait;
