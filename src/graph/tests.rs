//! Unit tests of the graph store, analysis and planning.
