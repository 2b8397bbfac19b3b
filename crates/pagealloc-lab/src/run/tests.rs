//! The run options' checks and the workloads they build.

use super::*;
use pagealloc::AllocError;

#[test]
fn out_of_memory_is_counted_and_any_other_failure_ends_the_run() {
    let mut failures = AllocFailures::default();
    assert!(failures.note(Err(AllocError::OutOfMemory { order: 0 })).is_none());
    assert!(failures.note(Err(AllocError::OutOfMemory { order: 3 })).is_none());
    assert_eq!((failures.out_of_memory, failures.rejected), (2, None));
    assert!(failures.note(Err(AllocError::OrderTooLarge { order: 11 })).is_none());
    assert!(failures.note(Err(AllocError::NoSuchNode { node: 2, nodes: 1 })).is_none());
    assert_eq!(failures.rejected, Some(AllocError::OrderTooLarge { order: 11 }), "the first rejection is kept");
}
