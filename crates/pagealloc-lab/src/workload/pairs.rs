//! Sender/receiver pairs over a socket: the sender allocates and fills buffers on its CPU,
//! the receiver copies them out and frees them on its CPU. One CPU only refills its pageset
//! and the other only frees: pages come back cache-hot for the sender only if the receiver
//! returns them to the buddy promptly.
//!
//! - netperf (SCTP_STREAM_MANY, TCP_STREAM): messages are carved from order-3 (32 KiB)
//!   page_frag blocks; a block is freed by whoever drops its last reference (usually the
//!   receiver, after the sender moved on to a new block).
//! - AF_UNIX (lmbench bw_unix): each message's data sits in order-3 paged fragments
//!   allocated per message and freed by the receiver.
//!
//! Pair i runs on CPUs 2i (sender) and 2i + 1 (receiver); an odd last CPU idles.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::{CpuTask, Env, Idle, Next, Workload};
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

/// Marks the sender's current block retired; returns it if no fragment is in flight.
fn retire(shared: &mut Shared, head: u64) -> Option<Block> {
    let carved = shared.carved.get_mut(&head)?;
    carved.retired = true;
    if carved.in_flight == 0 {
        return shared.carved.remove(&head).map(|c| c.block);
    }
    None
}

struct Sender {
    config: Pairs,
    socket: Socket,
    /// netperf: head pfn of the current page_frag block and bytes used in it.
    current: Option<(u64, u64)>,
}

impl Sender {
    fn unix_message(&mut self, env: &mut dyn Env) -> Message {
        let mut message = Message { data: Vec::new(), owned: Vec::new() };
        let mut left = self.config.message_bytes;
        while left > 0 {
            let Some(block) = env.alloc(FRAG_ORDER, AllocRequest::KERNEL) else { break };
            let bytes = left.min(FRAG_BYTES);
            let pages = bytes.div_ceil(4096);
            env.touch(block.pfn(), pages);
            message.data.push((block.pfn(), pages, None));
            message.owned.push(block);
            left -= bytes;
        }
        message
    }

    fn netperf_message(&mut self, env: &mut dyn Env) -> Message {
        let mut message = Message { data: Vec::new(), owned: Vec::new() };
        let mut left = self.config.message_bytes;
        while left > 0 {
            if self.current.is_none_or(|(_, used)| used >= FRAG_BYTES) {
                if let Some((head, _)) = self.current.take() {
                    let done = retire(&mut self.socket.lock().expect("unpoisoned"), head);
                    if let Some(block) = done {
                        env.free(block);
                    }
                }
                let Some(block) = env.alloc(FRAG_ORDER, AllocRequest::KERNEL) else { break };
                let head = block.pfn();
                self.socket
                    .lock()
                    .expect("unpoisoned")
                    .carved
                    .insert(head, Carved { block, in_flight: 0, retired: false });
                self.current = Some((head, 0));
            }
            let (head, used) = self.current.as_mut().expect("a current block");
            let bytes = left.min(FRAG_BYTES - *used);
            let first_page = *head + *used / 4096;
            let pages = (*used + bytes).div_ceil(4096) - *used / 4096;
            env.touch(first_page, pages);
            self.socket.lock().expect("unpoisoned").carved.get_mut(head).expect("carved").in_flight += 1;
            message.data.push((first_page, pages, Some(*head)));
            *used += bytes;
            left -= bytes;
        }
        message
    }
}

impl CpuTask for Sender {
    fn step(&mut self, env: &mut dyn Env) -> Next {
        if self.socket.lock().expect("unpoisoned").queue.len() >= self.config.queue_messages {
            env.compute(self.config.poll_ns);
            return Next::Continue;
        }
        env.compute(self.config.per_message_ns);
        let message = match self.config.kind {
            PairKind::Unix => self.unix_message(env),
            PairKind::Netperf => self.netperf_message(env),
        };
        if message.data.is_empty() {
            env.compute(self.config.poll_ns);
        } else {
            self.socket.lock().expect("unpoisoned").queue.push_back(message);
            env.done(1);
        }
        Next::Continue
    }

    fn finish(&mut self, env: &mut dyn Env) {
        if let Some((head, _)) = self.current.take() {
            let done = retire(&mut self.socket.lock().expect("unpoisoned"), head);
            if let Some(block) = done {
                env.free(block);
            }
        }
    }
}

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
}

impl CpuTask for Receiver {
    fn step(&mut self, env: &mut dyn Env) -> Next {
        let message = self.socket.lock().expect("unpoisoned").queue.pop_front();
        match message {
            None => env.compute(self.config.poll_ns),
            Some(message) => {
                env.compute(self.config.receive_per_message_ns);
                self.consume(env, message, true);
            }
        }
        Next::Continue
    }

    fn finish(&mut self, env: &mut dyn Env) {
        loop {
            let message = self.socket.lock().expect("unpoisoned").queue.pop_front();
            let Some(message) = message else { break };
            self.consume(env, message, false);
        }
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
            "frag_order": FRAG_ORDER,
            "queue_messages": self.queue_messages,
            "per_message_ns": self.per_message_ns,
            "receive_per_message_ns": self.receive_per_message_ns,
            "poll_ns": self.poll_ns,
        })
    }
    fn tasks(&self, cpus: usize, _seed: u64) -> Vec<Box<dyn CpuTask>> {
        let mut tasks: Vec<Box<dyn CpuTask>> = Vec::with_capacity(cpus);
        for _ in 0..cpus / 2 {
            let socket = Socket::default();
            tasks.push(Box::new(Sender { config: self.clone(), socket: socket.clone(), current: None }));
            tasks.push(Box::new(Receiver { config: self.clone(), socket }));
        }
        if cpus % 2 == 1 {
            tasks.push(Box::new(Idle));
        }
        tasks
    }
}
