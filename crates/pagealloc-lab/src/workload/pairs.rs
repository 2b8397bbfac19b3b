//! Sender/receiver pairs over a socket: the sender allocates and fills buffers on its CPU,
//! the receiver copies them out and frees them on its CPU. One CPU only refills its pageset
//! and the other only frees: pages come back cache-hot for the sender only if the receiver
//! returns them to the buddy promptly.
//!
//! - netperf (SCTP_STREAM_MANY, TCP_STREAM): messages are carved from order-3 (32 KiB)
//!   page_frag blocks; a block is freed by whoever drops its last reference (usually the
//!   receiver, after the sender moved on to a new block).
//! - AF_UNIX (lmbench bw_unix): each write's data sits in paged fragments allocated per
//!   write and freed by the receiver: a 64 KiB write takes blocks of order 3, 2, 1 and 0
//!   (see `unix_skb`).
//!
//! Pair i runs on CPUs 2i (sender) and 2i + 1 (receiver); an odd last CPU idles. With
//! `role_swap_ns` the two tasks trade CPUs now and then, so each CPU alternates between
//! allocating and freeing: the case patch 9 of the 2023 series addresses (a CPU whose high
//! grew while it sent, then receives). With `co_located`, pair i runs both tasks on CPU i
//! instead, taking turns (see [`CoLocatedPair`]): the freed blocks land in the pageset the
//! next writes allocate from.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::unix_skb::{self, DataBlock};
use super::{CpuTask, Env, Idle, Step, Workload};
use crate::rng::SplitMix64;
use pagealloc::{AllocRequest, Block};

/// Order of fragment blocks (PAGE_FRAG_CACHE_MAX_ORDER, SKB_FRAG_PAGE_ORDER).
const FRAG_ORDER: u8 = 3;
const FRAG_BYTES: u64 = 4096 << FRAG_ORDER;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PairKind {
    Netperf,
    Unix,
}

#[derive(Clone, Debug)]
pub struct Pairs {
    pub kind: PairKind,
    pub message_bytes: u64,
    /// Messages the socket buffer holds before the sender waits.
    pub queue_messages: usize,
    /// Sender's protocol work per message (system call, copy-in bookkeeping, headers).
    pub per_message_ns: u64,
    /// Receiver's protocol work per message: the receive path (checksum, ack, copy-out,
    /// skb release) costs more than the send path, which is why a stream benchmark's socket
    /// buffer stays full and the receiver drops most last references.
    pub receive_per_message_ns: u64,
    /// What a side spends finding nothing to do before it looks again.
    pub poll_ns: u64,
    /// Mean time between a pair's sender and receiver trading CPUs (wake-up placement and
    /// load balancing move unpinned tasks); `None` pins each task to its CPU.
    pub role_swap_ns: Option<u64>,
    /// Both tasks of each pair on one CPU (one pair per CPU), as sync wake-ups tend to place
    /// them; `role_swap_ns` is then ignored (and reported as none).
    pub co_located: bool,
}

/// Default send buffer of a socket (net.core.wmem_default): a sender blocks once this much
/// of its data is queued and unread.
pub const SOCKET_BUFFER_BYTES: u64 = 212_992;

impl Pairs {
    pub fn new(kind: PairKind, message_bytes: u64) -> Pairs {
        let message_bytes = message_bytes.max(1);
        Pairs {
            kind,
            message_bytes,
            queue_messages: (SOCKET_BUFFER_BYTES / message_bytes).max(1) as usize,
            per_message_ns: 1_500,
            receive_per_message_ns: 2_000,
            poll_ns: 500,
            role_swap_ns: None,
            co_located: false,
        }
    }
}

/// A carved page_frag block and the fragments of it still in flight.
struct Carved {
    block: Block,
    in_flight: u32,
    /// The sender moved on: the last fragment's consumer frees the block.
    retired: bool,
}

#[derive(Default)]
struct Shared {
    queue: VecDeque<Message>,
    carved: HashMap<u64, Carved>,
    /// netperf: head pfn of the sender's current page_frag block and bytes used in it.
    sender_block: Option<(u64, u64)>,
}

/// A message in flight.
struct Message {
    /// Data to copy out: (first pfn, pages, carved block head if any).
    data: Vec<(u64, u64, Option<u64>)>,
    /// Blocks the receiver frees after reading (AF_UNIX fragments).
    owned: Vec<Block>,
}

type Socket = Arc<Mutex<Shared>>;

/// Drops one reference to a carved block; returns it when it is retired and unreferenced.
fn release_fragment(shared: &mut Shared, head: u64) -> Option<Block> {
    let carved = shared.carved.get_mut(&head)?;
    carved.in_flight -= 1;
    if carved.retired && carved.in_flight == 0 {
        return shared.carved.remove(&head).map(|c| c.block);
    }
    None
}

/// The sender's page_frag block `(head, bytes used)` if it has room for more data.
fn with_room(sender_block: Option<(u64, u64)>) -> Option<(u64, u64)> {
    sender_block.filter(|&(_, used)| used < FRAG_BYTES)
}

/// Marks the sender's current block retired; returns it if no fragment is in flight.
fn retire(shared: &mut Shared, head: u64) -> Option<Block> {
    let carved = shared.carved.get_mut(&head)?;
    carved.retired = true;
    if carved.in_flight == 0 {
        return shared.carved.remove(&head).map(|c| c.block);
    }
    None
}

/// Sends: allocates a message's buffers, fills them, queues the message.
struct Sender {
    config: Pairs,
    socket: Socket,
    /// AF_UNIX: the blocks each write allocates.
    unix_blocks: Vec<DataBlock>,
}

impl Sender {
    /// One write: the skbs' paged data, in blocks as af_unix allocates them (see
    /// `unix_skb`); the linear heads are slab memory, outside this model.
    fn unix_message(&mut self, env: &mut dyn Env) -> Message {
        let mut message = Message { data: Vec::new(), owned: Vec::new() };
        for data_block in &self.unix_blocks {
            let Some(block) = env.alloc(data_block.order, AllocRequest::KERNEL) else { break };
            let pages = data_block.bytes.div_ceil(4096);
            env.touch(block.pfn(), pages);
            message.data.push((block.pfn(), pages, None));
            message.owned.push(block);
        }
        message
    }

    /// Retires the sender's page_frag block (freeing it if no fragment is in flight), as the
    /// refill does before it allocates the next; with `only_if_full`, only a missing or full
    /// block. Says whether the sender now needs a new block. The check and the retirement are
    /// one lock hold, so two CPUs running the sender during a swap cannot retire a fresh block.
    fn retire_current(&mut self, env: &mut dyn Env, only_if_full: bool) -> bool {
        let (needs_block, done) = {
            let mut shared = self.socket.lock().expect("unpoisoned");
            let full = with_room(shared.sender_block).is_none();
            if only_if_full && !full {
                (false, None)
            } else {
                let current = shared.sender_block.take();
                (true, current.and_then(|(head, _)| retire(&mut shared, head)))
            }
        };
        if let Some(block) = done {
            env.free(block);
        }
        needs_block
    }

    /// Makes `block` the sender's page_frag block. If another CPU running this sender (during
    /// a role swap) started one meanwhile, that one is retired rather than lost.
    fn start_block(&mut self, env: &mut dyn Env, block: Block) {
        let head = block.pfn();
        let done = {
            let mut shared = self.socket.lock().expect("unpoisoned");
            shared.carved.insert(head, Carved { block, in_flight: 0, retired: false });
            let previous = shared.sender_block.replace((head, 0));
            previous.and_then(|(old_head, _)| retire(&mut shared, old_head))
        };
        if let Some(old) = done {
            env.free(old);
        }
    }

    fn netperf_message(&mut self, env: &mut dyn Env) -> Message {
        let mut message = Message { data: Vec::new(), owned: Vec::new() };
        let mut left = self.config.message_bytes;
        while left > 0 {
            if self.retire_current(env, true) {
                let Some(block) = env.alloc(FRAG_ORDER, AllocRequest::KERNEL) else { break };
                self.start_block(env, block);
            }
            // Carve under the socket lock; touch the data outside it.
            let carved = {
                let mut shared = self.socket.lock().expect("unpoisoned");
                let Some((head, used)) = with_room(shared.sender_block) else {
                    continue;
                };
                let bytes = left.min(FRAG_BYTES - used);
                shared.carved.get_mut(&head).expect("carved").in_flight += 1;
                shared.sender_block = Some((head, used + bytes));
                (head, head + used / 4096, (used + bytes).div_ceil(4096) - used / 4096, bytes)
            };
            let (head, first_page, pages, bytes) = carved;
            env.touch(first_page, pages);
            message.data.push((first_page, pages, Some(head)));
            left -= bytes;
        }
        message
    }

    fn queue_full(&self) -> bool {
        self.socket.lock().expect("unpoisoned").queue.len() >= self.config.queue_messages
    }

    /// Writes one message if the socket buffer has room; says whether it queued one.
    fn step(&mut self, env: &mut dyn Env) -> bool {
        if self.queue_full() {
            env.compute(self.config.poll_ns);
            return false;
        }
        env.compute(self.config.per_message_ns);
        let message = match self.config.kind {
            PairKind::Unix => self.unix_message(env),
            PairKind::Netperf => self.netperf_message(env),
        };
        if message.data.is_empty() {
            env.compute(self.config.poll_ns);
            false
        } else {
            self.socket.lock().expect("unpoisoned").queue.push_back(message);
            env.done(1);
            true
        }
    }

    fn finish(&mut self, env: &mut dyn Env) {
        self.retire_current(env, false);
    }
}

/// Receives: copies a message out and frees what it releases.
struct Receiver {
    config: Pairs,
    socket: Socket,
}

impl Receiver {
    /// Copies a message out (if `read`) and frees what it releases.
    fn consume(&mut self, env: &mut dyn Env, message: Message, read: bool) {
        let mut to_free = message.owned;
        for (pfn, pages, carved_from) in message.data {
            if read {
                env.touch(pfn, pages);
            }
            if let Some(head) = carved_from {
                if let Some(block) = release_fragment(&mut self.socket.lock().expect("unpoisoned"), head) {
                    to_free.push(block);
                }
            }
        }
        for block in to_free {
            env.free(block);
        }
    }

    fn queue_empty(&self) -> bool {
        self.socket.lock().expect("unpoisoned").queue.is_empty()
    }

    fn step(&mut self, env: &mut dyn Env) {
        let message = self.socket.lock().expect("unpoisoned").queue.pop_front();
        match message {
            None => env.compute(self.config.poll_ns),
            Some(message) => {
                env.compute(self.config.receive_per_message_ns);
                self.consume(env, message, true);
            }
        }
    }

    fn finish(&mut self, env: &mut dyn Env) {
        loop {
            let message = self.socket.lock().expect("unpoisoned").queue.pop_front();
            let Some(message) = message else { break };
            self.consume(env, message, false);
        }
    }
}

/// A pair's two tasks over one socket; whoever runs them, the sender's page_frag block and
/// the queue live in the socket.
struct Pair {
    sender: Sender,
    receiver: Receiver,
}

impl Pair {
    fn new(config: &Pairs, socket: &Socket) -> Pair {
        Pair {
            sender: Sender {
                config: config.clone(),
                socket: socket.clone(),
                unix_blocks: unix_skb::write_blocks(config.message_bytes, SOCKET_BUFFER_BYTES),
            },
            receiver: Receiver { config: config.clone(), socket: socket.clone() },
        }
    }

    /// The sender retires its block, then the receiver drains the queue and frees.
    fn finish(&mut self, env: &mut dyn Env) {
        self.sender.finish(env);
        self.receiver.finish(env);
    }
}

/// When a pair's two tasks trade CPUs. Both CPUs of a pair hold a copy seeded alike, so they
/// agree on the schedule without sharing state: the swap points are a fixed sequence in
/// time with intervals uniform in [mean / 2, 3 * mean / 2).
struct RoleSchedule {
    rng: SplitMix64,
    mean_ns: Option<u64>,
    next_swap_ns: u64,
    swapped: bool,
}

impl RoleSchedule {
    fn new(mean_ns: Option<u64>, seed: u64) -> RoleSchedule {
        let mut schedule = RoleSchedule { rng: SplitMix64::new(seed), mean_ns, next_swap_ns: 0, swapped: false };
        schedule.next_swap_ns = schedule.interval_ns().max(1);
        schedule
    }

    fn interval_ns(&mut self) -> u64 {
        match self.mean_ns {
            Some(mean_ns) => mean_ns / 2 + self.rng.below(mean_ns.max(1)),
            None => u64::MAX,
        }
    }

    fn is_pinned(&self) -> bool {
        self.mean_ns.is_none()
    }

    /// Whether the pair's first task (the sender at the start) runs on the other CPU at `now_ns`.
    fn swapped_at(&mut self, now_ns: u64) -> bool {
        // Bounded: each round moves the next swap at least mean / 2 >= 1 ns later.
        while now_ns >= self.next_swap_ns {
            self.swapped = !self.swapped;
            self.next_swap_ns = self.next_swap_ns.saturating_add(self.interval_ns().max(1));
        }
        self.swapped
    }
}

/// One CPU of a pair: it runs the sender or the receiver, whichever the role schedule puts
/// on it now. The sender's state (its page_frag block) lives in the socket, so it moves with
/// the task as in the kernel (a task's page_frag is per task).
struct PairCpu {
    /// 0: runs the sender until the first swap; 1: the receiver.
    slot: u8,
    pair: Pair,
    roles: RoleSchedule,
}

impl CpuTask for PairCpu {
    fn step(&mut self, env: &mut dyn Env) -> Step {
        // Pinned pairs skip the clock read (a real clock on real threads).
        let swapped = !self.roles.is_pinned() && self.roles.swapped_at(env.now_ns());
        let runs_sender = (self.slot == 0) != swapped;
        if runs_sender {
            self.pair.sender.step(env);
        } else {
            self.pair.receiver.step(env);
        }
        Step::Continue
    }

    fn finish(&mut self, env: &mut dyn Env) {
        self.pair.finish(env);
    }
}

/// Both tasks of a pair on one CPU. A writer's wake-up of its reader is a sync wake-up
/// (af_unix and TCP both wake readers with `wake_up_interruptible_sync_poll()`), which
/// invites the scheduler to run the reader on the writer's CPU (wake_affine()). Modelled as
/// turns: the sender writes until the socket buffer is full and sleeps, the receiver reads
/// until it is empty and sleeps; each switch costs `poll_ns`. Frees and the allocations that
/// follow them meet in one pageset, so freed blocks can be reused while still cache-hot.
struct CoLocatedPair {
    pair: Pair,
    sending: bool,
}

impl CpuTask for CoLocatedPair {
    fn step(&mut self, env: &mut dyn Env) -> Step {
        let Pair { sender, receiver } = &mut self.pair;
        let switch = if self.sending { sender.queue_full() } else { receiver.queue_empty() };
        if switch {
            self.sending = !self.sending;
            env.compute(sender.config.poll_ns);
        } else if self.sending {
            // Out of memory with data still queued: the reader's turn frees some.
            if !sender.step(env) && !receiver.queue_empty() {
                self.sending = false;
            }
        } else {
            receiver.step(env);
        }
        Step::Continue
    }

    fn finish(&mut self, env: &mut dyn Env) {
        self.pair.finish(env);
    }
}

impl Workload for Pairs {
    fn name(&self) -> &'static str {
        match self.kind {
            PairKind::Netperf => "netperf-pairs",
            PairKind::Unix => "unix-pairs",
        }
    }
    fn unit(&self) -> &'static str {
        "messages"
    }
    fn params(&self) -> serde_json::Value {
        json!({
            "kind": self.kind,
            "message_bytes": self.message_bytes,
            "frag_orders": match self.kind {
                PairKind::Netperf => vec![FRAG_ORDER],
                PairKind::Unix => unix_skb::write_blocks(self.message_bytes, SOCKET_BUFFER_BYTES)
                    .iter()
                    .map(|block| block.order)
                    .collect(),
            },
            "queue_messages": self.queue_messages,
            "per_message_ns": self.per_message_ns,
            "receive_per_message_ns": self.receive_per_message_ns,
            "poll_ns": self.poll_ns,
            "role_swap_ns": if self.co_located { None } else { self.role_swap_ns },
            "co_located": self.co_located,
        })
    }
    fn tasks(&self, cpus: usize, seed: u64) -> Vec<Box<dyn CpuTask>> {
        let mut tasks: Vec<Box<dyn CpuTask>> = Vec::with_capacity(cpus);
        if self.co_located {
            for _ in 0..cpus {
                let socket = Socket::default();
                tasks.push(Box::new(CoLocatedPair { pair: Pair::new(self, &socket), sending: true }));
            }
            return tasks;
        }
        for pair in 0..cpus / 2 {
            let socket = Socket::default();
            let role_seed = seed ^ (pair as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            for slot in 0..2 {
                tasks.push(Box::new(PairCpu {
                    slot,
                    pair: Pair::new(self, &socket),
                    roles: RoleSchedule::new(self.role_swap_ns, role_seed),
                }));
            }
        }
        if cpus % 2 == 1 {
            tasks.push(Box::new(Idle));
        }
        tasks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_cpus_of_a_pair_agree_on_the_role_schedule() {
        let (mut first, mut second) = (RoleSchedule::new(Some(1_000), 9), RoleSchedule::new(Some(1_000), 9));
        let mut swaps = 0;
        let mut previous = false;
        // The second CPU also asks in between; both see the same schedule.
        for now_ns in (0..100_000u64).step_by(7) {
            second.swapped_at(now_ns.saturating_sub(4));
            let swapped = first.swapped_at(now_ns);
            assert_eq!(swapped, second.swapped_at(now_ns), "at {now_ns} ns");
            if swapped != previous {
                swaps += 1;
                previous = swapped;
            }
        }
        // Intervals are uniform in [500, 1500) ns: between 66 and 200 swaps in 100 us.
        assert!((66..=200).contains(&swaps), "{swaps} swaps");
    }

    #[test]
    fn a_schedule_without_an_interval_never_swaps() {
        let mut pinned = RoleSchedule::new(None, 1);
        assert!(!pinned.swapped_at(0));
        assert!(!pinned.swapped_at(u64::MAX - 1));
    }
}
