//! The goals layer's tests: one binary, one module per subject.

mod common;

mod adapt;
mod checkpoint;
mod corpus;
mod every_event;
mod goals;
mod postgres_locks;
