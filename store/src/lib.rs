//! The platform's SQL: one module per D1 table, each query a function named for what it does
//! (`jobs::job_insert_many`, `jobs::job_claim`...). Both Workers reach D1 only through here, so a
//! table's statements are read in one place. Dependencies point one way: the domain in
//! `jobs-shared` <- this crate <- the Workers (ARCHITECTURE.md).

pub mod budget_alerts;
pub mod budgets;
pub mod d1;
pub mod feed_items;
pub mod links;
pub mod rss_sources;
