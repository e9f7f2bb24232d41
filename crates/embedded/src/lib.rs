//! Embedded backend (in progress).
