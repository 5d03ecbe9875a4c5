//! hsa-tests: end-to-end tests of hsa-rt; the tests themselves are in `tests/tests/`.
