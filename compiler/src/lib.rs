//! lwirc: the pipeline that turns LWIR drafts into validated, pinned workflow versions,
//! and the renderers that show findings to people (miette), programs (JSON) and editors
//! and code-scanning services (SARIF 2.1.0).
//!
//! The `lwirc` binary (`src/main.rs`) is a thin layer over this library: it reads files,
//! calls [`pipeline::validate`], renders, and maps the outcome to an exit code.

/// RFC 8785 canonical JSON and `sha256:` digests (now in `lwir-spec`, re-exported here).
pub use lwir_spec::canon;
pub mod drift;
/// The PlannerManifest (now in `lwir-repair`, re-exported here).
pub use lwir_repair::manifest;
pub mod lsp;
pub mod model;
pub mod pipeline;
pub mod registry;
pub mod render;
pub mod session;
pub mod snapshot;
pub mod templates;
