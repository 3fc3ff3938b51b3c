//! Criterion benches of nrpt live in `benches/`; see `benches/README.md` for the
//! method (ratios against a reference measured in the same run).
