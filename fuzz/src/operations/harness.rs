//! The allocator under test with the model beside it, and the checks every kind of operation
//! shares: one allocation (success recorded in the model, failure checked against the errors
//! the request warrants), one free, one drain, one checker pass. Setting up and winding down
//! (everything freed merges back to the boot layout) live here too; what each `Op` does is in
//! `step`.

use pagealloc::platform::{Platform, TestPlatform};
use pagealloc::types::NR_ORDERS;
use pagealloc::{AllocError, AllocRequest, AllocatorBuilder, Block, PageAllocator};

use super::input::Header;
use super::model::Model;
use super::observe::{fingerprint, Fingerprint};

const MAX_CPUS: u8 = 4;

/// The running harness.
pub(super) struct Harness {
    pub(super) allocator: PageAllocator<TestPlatform>,
    /// Builds the machine again, for the second allocator whose blocks `ForeignFree` frees.
    pub(super) builder_for_donor: Box<dyn Fn() -> AllocatorBuilder>,
    pub(super) donor: Option<PageAllocator<TestPlatform>>,
    pub(super) model: Model,
    pub(super) held: Vec<Block>,
    pub(super) cpus: usize,
    /// The free lists right after the build, which everything freed must merge back to.
    boot_buddyinfo: Vec<[u64; NR_ORDERS]>,
}

impl Harness {
    /// Builds the machine, preset and CPUs `header` chooses, and checks the fresh allocator
    /// against the model: everything managed is free.
    pub(super) fn new(header: &Header) -> Harness {
        let cpus = 1 + usize::from(header.cpus % MAX_CPUS);
        let presets = pagealloc::presets::PRESETS;
        let policy = presets[usize::from(header.preset) % presets.len()].policy;
        let machine = header.machine.clone();
        let (builder, spec) = machine.build(cpus);
        let mut allocator = PageAllocator::build(builder.policy(policy), TestPlatform::new(cpus))
            .unwrap_or_else(|e| panic!("{machine:?} does not build: {e}"));
        allocator.set_migrate(std::sync::Arc::new(super::client::PanickyClient::new()));
        let boot_buddyinfo = fingerprint(&allocator, false).buddyinfo;
        let model = Model::new(&allocator, &spec);
        let census = allocator.check_invariants().expect("fresh allocator");
        model.check_census(&census, "after build");
        assert_eq!(census.free_pages, model.managed_pages);
        Harness {
            allocator,
            builder_for_donor: Box::new(move || {
                let global_lock = pagealloc::presets::find("global-lock").expect("preset").policy;
                machine.build(1).0.policy(global_lock)
            }),
            donor: None,
            model,
            held: Vec::new(),
            cpus,
            boot_buddyinfo,
        }
    }

    /// Frees every held block and drains the pagesets: everything is free, and merges back
    /// to the boot layout unless a high-atomic reserve holds some of it.
    pub(super) fn finish(mut self) {
        for block in std::mem::take(&mut self.held) {
            self.free(block);
        }
        self.drained("final drain_all", |a| a.pagesets().drain_all());
        self.check("everything freed");
        let allocator = &self.allocator;
        let census = allocator.check_invariants().expect("checked");
        assert_eq!(census.free_pages, self.model.managed_pages, "everything free at the end");
        if allocator.zones().iter().all(|z| z.state().reserved_highatomic_pages() == 0) {
            assert_eq!(fingerprint(allocator, false).buddyinfo, self.boot_buddyinfo, "everything merges back");
        }
    }

    pub(super) fn cpu(&self) -> usize {
        self.allocator.platform().current_cpu()
    }

    /// One allocation with the checks every allocation gets; `None` when it failed.
    pub(super) fn alloc(&mut self, order: u8, request: AllocRequest) -> Option<()> {
        let expected = self.model.request_errors(order, &request);
        let before = if expected.is_empty() { None } else { Some(fingerprint(&self.allocator, false)) };
        match self.allocator.alloc_pages(order, request) {
            Ok(block) => {
                assert!(expected.is_empty(), "order {order} {request:?} succeeded; expected one of {expected:?}");
                self.model.take(&self.allocator, &block, order, &request);
                self.held.push(block);
                Some(())
            }
            Err(error) => {
                self.check_alloc_error(error, order, &request, &expected, before);
                None
            }
        }
    }

    /// A failed allocation: out of memory only when plausible, any other error one the
    /// request warrants, and (given the state `before`) nothing changed.
    pub(super) fn check_alloc_error(
        &self,
        error: AllocError,
        order: u8,
        request: &AllocRequest,
        expected: &[AllocError],
        before: Option<Fingerprint>,
    ) {
        match error {
            AllocError::OutOfMemory { order: failed } if expected.is_empty() => {
                assert_eq!(failed, order);
                self.model.check_oom(&self.allocator, order, request);
            }
            error => {
                assert!(
                    expected.contains(&error),
                    "order {order} {request:?}: {error:?}; expected one of {expected:?}"
                );
                if let Some(before) = before {
                    assert_eq!(fingerprint(&self.allocator, false), before, "a rejected request changed the state");
                }
            }
        }
    }

    pub(super) fn free(&mut self, block: Block) {
        self.model.release(&block);
        let (pfn, order) = (block.pfn(), block.order());
        if let Err(error) = self.allocator.free_pages(block) {
            panic!("free of the held block at {pfn:#x} order {order}: {error}");
        }
    }

    /// Runs `drain` and checks it returned exactly the pages that left the pagesets. Frees
    /// handed over to a zone's owner, and frees parked in their pageblocks, count with the
    /// pagesets but are not drained from them (any zone-lock hold releases the first, a
    /// collection the second), so they are left out of both counts.
    pub(super) fn drained(&self, what: &str, drain: impl FnOnce(&PageAllocator<TestPlatform>) -> u64) {
        let in_pagesets = |allocator: &PageAllocator<TestPlatform>| {
            let counters = allocator.counters();
            counters.pcp_pages() - counters.handed_over_pages() - counters.parked_pages()
        };
        let before = in_pagesets(&self.allocator);
        let drained = drain(&self.allocator);
        let after = in_pagesets(&self.allocator);
        assert_eq!(
            before.checked_sub(drained),
            Some(after),
            "{what}: {before} cached, {drained} drained, {after} left"
        );
    }

    /// The invariant checker, and its census against the model.
    pub(super) fn check(&self, when: &str) {
        let census = self.allocator.check_invariants().unwrap_or_else(|v| panic!("{when}: {v}"));
        self.model.check_census(&census, when);
    }
}
