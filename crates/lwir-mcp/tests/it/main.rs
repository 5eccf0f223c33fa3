//! Integration tests of `lwir-mcp` against real MCP servers nobody here wrote —
//! `@modelcontextprotocol/server-everything` (npm) and `mcp-server-time` (PyPI), found
//! through `LWIRC_TEST_MCP_EVERYTHING` and `LWIRC_TEST_MCP_TIME` (`.ci/engines.sh` installs
//! them) — and against `servers/unruly.py`, a small server of ours that misbehaves on
//! request. A test whose server is not installed says so on the terminal and passes,
//! unless `LWIRC_REQUIRE_ENGINES` is set (CI sets it): then it fails.

#[macro_use]
mod common;

mod environment;
mod everything;
mod http;
mod import;
mod lifecycle;
mod time;
mod unruly;
