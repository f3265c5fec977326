//! The built-in handlers' pure parts (feeds, link checks, AI tags and LLM messages,
//! screenshots): the consumer's handlers do the I/O around them.

pub mod ai_tags;
pub mod feed;
pub mod image_size;
pub mod link_health;
pub mod llm_messages;
pub mod screenshot;
