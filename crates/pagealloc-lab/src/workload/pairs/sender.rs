//! The sending task: allocates a message's buffers (AF_UNIX skbs' paged data, or data carved
//! from a page_frag block), fills them, and queues them: an AF_UNIX write skb by skb, as
//! unix_stream_sendmsg() queues each and wakes the reader, a netperf message whole.

use super::socket::{retire, with_room, Carved, Message, Sleep, Socket};
use super::{PairKind, Pairs, FRAG_BYTES, FRAG_ORDER};
use crate::workload::unix_skb::Skb;
use crate::workload::Env;
use pagealloc::{AllocRequest, Block};

/// Sends: allocates a message's buffers, fills them, queues the message.
pub(super) struct Sender {
    pub(super) config: Pairs,
    pub(super) socket: Socket,
    /// AF_UNIX: the skbs each write is cut into.
    pub(super) unix_skbs: Vec<Skb>,
    /// AF_UNIX: the skb of the current write the sender queues next.
    pub(super) next_skb: usize,
}

impl Sender {
    /// The next skb of the current write: its paged data, in blocks as af_unix allocates them
    /// (see `unix_skb`); the linear head is slab memory, outside this model.
    /// `None` if not even its first block could be allocated.
    fn unix_skb(&mut self, env: &mut dyn Env, receive_ns: u64) -> Option<Message> {
        let skb = &self.unix_skbs[self.next_skb];
        let charge_bytes = skb.truesize_bytes;
        let mut message = Message { data: Vec::new(), owned: Vec::new(), charge_bytes, receive_ns };
        for data_block in &skb.blocks {
            let Some(block) = env.alloc(data_block.order, AllocRequest::KERNEL) else {
                if message.owned.is_empty() {
                    return None;
                }
                break;
            };
            let pages = data_block.bytes.div_ceil(4096);
            env.touch(block.pfn(), pages);
            message.data.push((block.pfn(), pages, None));
            message.owned.push(block);
        }
        Some(message)
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

    /// `None` if no data could be carved.
    fn netperf_message(&mut self, env: &mut dyn Env) -> Option<Message> {
        let receive_ns = self.config.receive_per_message_ns + self.config.cross_cpu_share_ns();
        let charge_bytes = self.config.message_bytes;
        let mut message = Message { data: Vec::new(), owned: Vec::new(), charge_bytes, receive_ns };
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
        (!message.data.is_empty()).then_some(message)
    }

    pub(super) fn queue_full(&self) -> bool {
        self.socket.lock().expect("unpoisoned").queued_bytes() >= self.config.send_buffer_bytes
    }

    /// Whether the sender may write now: asleep while the buffer is full, until the
    /// receiver's frees wake it and the wake-up has run its course.
    fn awake(&mut self, env: &mut dyn Env) -> bool {
        let (sleep, fell_asleep) = {
            let mut shared = self.socket.lock().expect("unpoisoned");
            let fell_asleep =
                shared.sender_sleep == Sleep::Awake && shared.queued_bytes() >= self.config.send_buffer_bytes;
            if fell_asleep {
                shared.sender_sleep = Sleep::Asleep;
            }
            (shared.sender_sleep, fell_asleep)
        };
        if fell_asleep {
            env.record("sender_sleeps", 1.0);
        }
        match sleep {
            Sleep::Awake => true,
            Sleep::Asleep => {
                env.sleep_until(env.now_ns() + self.config.poll_ns);
                false
            }
            Sleep::WokenFor(at_ns) => {
                env.sleep_until(at_ns);
                self.socket.lock().expect("unpoisoned").sender_sleep = Sleep::Awake;
                true
            }
        }
    }

    /// Queues one unit of a write (an AF_UNIX skb, a netperf message) if the send buffer has
    /// room; says whether it queued one.
    pub(super) fn step(&mut self, env: &mut dyn Env) -> bool {
        if !self.awake(env) {
            return false;
        }
        let (message, write_done) = match self.config.kind {
            PairKind::Unix => {
                let (before, after) = self.unix_skb_bytes();
                let share = |per_message_ns| self.config.skb_share_ns(per_message_ns, before, after);
                let (send_ns, receive_ns) =
                    (share(self.config.per_message_ns), share(self.config.receive_per_message_ns));
                env.compute(send_ns);
                (self.unix_skb(env, receive_ns), after == self.config.message_bytes)
            }
            PairKind::Netperf => {
                env.compute(self.config.per_message_ns + self.config.cross_cpu_share_ns());
                (self.netperf_message(env), true)
            }
        };
        let Some(message) = message else {
            env.sleep_until(env.now_ns() + self.config.poll_ns);
            return false;
        };
        let mut shared = self.socket.lock().expect("unpoisoned");
        shared.push(message);
        // The data wakes a sleeping reader (sk_data_ready()).
        let woke = shared.receiver_sleep.wake(env.now_ns(), self.config.wake_ns);
        drop(shared);
        if woke {
            env.compute(self.config.waker_cost_ns());
        }
        if self.config.kind == PairKind::Unix {
            self.next_skb = (self.next_skb + 1) % self.unix_skbs.len();
        }
        if write_done {
            env.done(1);
        }
        true
    }

    /// The bytes of the current write before and after its next skb.
    fn unix_skb_bytes(&self) -> (u64, u64) {
        let before: u64 = self.unix_skbs[..self.next_skb].iter().map(|skb| skb.bytes).sum();
        (before, before + self.unix_skbs[self.next_skb].bytes)
    }

    pub(super) fn finish(&mut self, env: &mut dyn Env) {
        self.retire_current(env, false);
    }
}
