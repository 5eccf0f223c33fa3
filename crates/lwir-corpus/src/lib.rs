//! Fixture corpus for lwirc; the tests live under `tests/`.
