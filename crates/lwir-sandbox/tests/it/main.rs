//! The sandbox's integration tests: each runs a hostile command in a real sandbox and
//! checks from the host that the confinement held — each would fail if that confinement
//! were missing.
//!
//! They need bubblewrap. Without it (or where it cannot make namespaces) they say on the
//! terminal that they are skipped, unless `LWIRC_REQUIRE_ENGINES` is set (as CI sets it),
//! where they fail. Run as root, the suite runs a second time as an ordinary user
//! (`ordinary_user`), where processes and memory are bounded by rlimits instead of cgroups.

mod support;

mod files;
mod network;
mod ordinary_user;
mod output;
mod probe;
mod processes;
mod resources;
mod secrets;
mod time;
