//! The socket a pair shares: its message queue and the sender's carved page_frag blocks,
//! with the reference counting that decides who frees a block.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use super::FRAG_BYTES;
use pagealloc::Block;

/// A carved page_frag block and the fragments of it still in flight.
pub(super) struct Carved {
    pub(super) block: Block,
    pub(super) in_flight: u32,
    /// The sender moved on: the last fragment's consumer frees the block.
    pub(super) retired: bool,
}

/// A side's sleep: asleep since it found nothing to do, and, once the other side woke it,
/// when it runs again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Sleep {
    #[default]
    Awake,
    Asleep,
    WokenFor(u64),
}

impl Sleep {
    /// The other side made work for this one at `now_ns`: a sleeper runs `wake_ns` later.
    /// Says whether it woke one (whose waker then pays the wake-up's cost to it).
    #[must_use]
    pub(super) fn wake(&mut self, now_ns: u64, wake_ns: u64) -> bool {
        let asleep = *self == Sleep::Asleep;
        if asleep {
            *self = Sleep::WokenFor(now_ns.saturating_add(wake_ns));
        }
        asleep
    }
}

#[derive(Default)]
pub(super) struct Shared {
    /// Written and not yet read; only `push` and `pop` change it.
    queue: VecDeque<Message>,
    /// What the queue charges to the sender's send buffer (sk_wmem_alloc).
    queued_bytes: u64,
    pub(super) sender_sleep: Sleep,
    pub(super) receiver_sleep: Sleep,
    pub(super) carved: HashMap<u64, Carved>,
    /// netperf: head pfn of the sender's current page_frag block and bytes used in it.
    pub(super) sender_block: Option<(u64, u64)>,
}

impl Shared {
    pub(super) fn push(&mut self, message: Message) {
        self.queued_bytes += message.charge_bytes;
        self.queue.push_back(message);
    }

    pub(super) fn pop(&mut self) -> Option<Message> {
        let message = self.queue.pop_front()?;
        assert!(self.queued_bytes >= message.charge_bytes, "the queue charges what its messages do");
        self.queued_bytes -= message.charge_bytes;
        Some(message)
    }

    pub(super) fn queued_bytes(&self) -> u64 {
        debug_assert_eq!(self.queue.is_empty(), self.queued_bytes == 0, "every message charges something");
        self.queued_bytes
    }

    pub(super) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

/// A unit of the queue: an AF_UNIX skb, or a netperf message.
pub(super) struct Message {
    /// Data to copy out: (first pfn, pages, carved block head if any).
    pub(super) data: Vec<(u64, u64, Option<u64>)>,
    /// Blocks the receiver frees after reading (AF_UNIX fragments).
    pub(super) owned: Vec<Block>,
    /// What it charges to the send buffer while queued: an skb's truesize, a netperf
    /// message's bytes.
    pub(super) charge_bytes: u64,
    /// The receiver's protocol work for it, with its share of the cross-CPU cost.
    pub(super) receive_ns: u64,
}

pub(super) type Socket = Arc<Mutex<Shared>>;

/// Drops one reference to a carved block; returns it when it is retired and unreferenced.
pub(super) fn release_fragment(shared: &mut Shared, head: u64) -> Option<Block> {
    let carved = shared.carved.get_mut(&head)?;
    carved.in_flight -= 1;
    if carved.retired && carved.in_flight == 0 {
        return shared.carved.remove(&head).map(|c| c.block);
    }
    None
}

/// The sender's page_frag block `(head, bytes used)` if it has room for more data.
pub(super) fn with_room(sender_block: Option<(u64, u64)>) -> Option<(u64, u64)> {
    sender_block.filter(|&(_, used)| used < FRAG_BYTES)
}

/// Marks the sender's current block retired; returns it if no fragment is in flight.
pub(super) fn retire(shared: &mut Shared, head: u64) -> Option<Block> {
    let carved = shared.carved.get_mut(&head)?;
    carved.retired = true;
    if carved.in_flight == 0 {
        return shared.carved.remove(&head).map(|c| c.block);
    }
    None
}
