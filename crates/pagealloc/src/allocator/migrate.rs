//! The migration client: what compaction and range operations ask to move a movable block,
//! and how they name it. The allocator knows which blocks are allocated movable, not what
//! they hold or who points at them; the embedder's client copies and repoints.

use super::PageAllocator;
use crate::block::Block;
use crate::platform::Platform;
use crate::types::Pfn;

/// A block compaction wants moved, as the migration scanner saw its head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MigrateSource {
    pub pfn: Pfn,
    pub order: u8,
    pub zone_index: u16,
    /// The head's generation when seen: a block freed and handed out again since has
    /// another, so a client comparing it with its own handle moves only what it still owns.
    pub generation: u32,
}

impl MigrateSource {
    /// Is `block` the block this source names (same head, order and generation)?
    pub fn is(&self, block: &Block) -> bool {
        block.pfn() == self.pfn
            && block.order() == self.order
            && block.zone_index() == self.zone_index
            && block.generation() == self.generation
    }
}

/// A client that can move its movable blocks. Called with no allocator lock held.
pub trait Migrate<P: Platform>: Send + Sync {
    /// Moves the block `source` names into `target` (same order, freshly allocated): copy
    /// the contents, repoint every reference, and return the client's handle of the old
    /// block (`Ok`), which the allocator frees. A client that does not own that block any
    /// more, or cannot move it now, returns `target` untouched (`Err`). `allocator` is
    /// there for the platform (a simulated client charges its copy through
    /// `touch_pages`); the client must not free `target` or the old block through it.
    ///
    /// A client that panics gives both blocks up where they stand: the allocator takes
    /// `target` back (unless the client freed it) and leaves the source with the client. So
    /// a client must not make `target` reachable (repoint references to it) before it can
    /// no longer panic, and must still own the source if it does.
    fn migrate(&self, allocator: &PageAllocator<P>, source: MigrateSource, target: Block) -> Result<Block, Block>;
}
