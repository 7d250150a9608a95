//! Scenario tests of bfq.
