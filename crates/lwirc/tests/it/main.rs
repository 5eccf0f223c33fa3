//! The CLI's tests: one binary, one module per subject, each running the built `lwirc`
//! (`common` holds the helpers they share).

#[macro_use]
mod common;

mod cli;
mod code_run;
mod compile;
mod definition;
mod drift;
mod editor;
mod eval;
mod fix;
mod generated_report;
mod goal_backends;
mod goal_run;
mod goal_serve;
mod goals;
mod hash;
mod hostile;
mod lsp;
mod lsp_stdio;
mod manifest;
mod messages;
mod model;
mod options;
mod registry;
mod registry_backends;
mod repair;
mod run;
mod sandbox;
mod secrets;
mod terminal;
