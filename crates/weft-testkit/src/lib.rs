//! Dev-only helpers that start real components for tests (DESIGN.md §7).
