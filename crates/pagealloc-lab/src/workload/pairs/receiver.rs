//! The receiving task: copies queued messages out and frees what they release (their own
//! blocks, and carved blocks whose last fragment it drops).

use super::socket::{release_fragment, Message, Sleep, Socket};
use super::Pairs;
use crate::workload::Env;

/// Receives: copies a message out and frees what it releases.
pub(super) struct Receiver {
    pub(super) config: Pairs,
    pub(super) socket: Socket,
}

impl Receiver {
    /// Copies a message out (if `read`) and frees what it releases.
    fn consume(&mut self, env: &mut dyn Env, message: Message, read: bool) {
        let mut to_free = message.owned;
        for (pfn, pages, carved_from) in message.data {
            if read {
                env.read(pfn, pages);
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

    pub(super) fn queue_empty(&self) -> bool {
        self.socket.lock().expect("unpoisoned").is_empty()
    }

    /// The next message, or `None` while the receiver sleeps: asleep from finding the queue
    /// empty until a write wakes it and the wake-up has run its course.
    fn next_message(&mut self, env: &mut dyn Env) -> Option<Message> {
        let mut shared = self.socket.lock().expect("unpoisoned");
        if let Sleep::WokenFor(at_ns) = shared.receiver_sleep {
            shared.receiver_sleep = Sleep::Awake;
            drop(shared);
            env.sleep_until(at_ns);
            shared = self.socket.lock().expect("unpoisoned");
        }
        let message = match shared.receiver_sleep {
            Sleep::Awake => shared.pop(),
            Sleep::Asleep | Sleep::WokenFor(_) => None,
        };
        let fell_asleep = message.is_none() && shared.receiver_sleep == Sleep::Awake;
        if fell_asleep {
            shared.receiver_sleep = Sleep::Asleep;
        }
        drop(shared);
        if fell_asleep {
            env.record("receiver_sleeps", 1.0);
        }
        if message.is_none() {
            env.sleep_until(env.now_ns() + self.config.poll_ns);
        }
        message
    }

    pub(super) fn step(&mut self, env: &mut dyn Env) {
        let Some(message) = self.next_message(env) else { return };
        env.compute(message.receive_ns);
        self.consume(env, message, true);
        // The freed data makes room: a writer asleep on a full buffer wakes once the queue
        // is down to the writable mark (sk_write_space()).
        let mut shared = self.socket.lock().expect("unpoisoned");
        let woke = shared.queued_bytes() <= self.config.writable_bytes
            && shared.sender_sleep.wake(env.now_ns(), self.config.wake_ns);
        drop(shared);
        if woke {
            env.compute(self.config.waker_cost_ns());
        }
    }

    pub(super) fn finish(&mut self, env: &mut dyn Env) {
        loop {
            let message = self.socket.lock().expect("unpoisoned").pop();
            let Some(message) = message else { break };
            self.consume(env, message, false);
        }
    }
}
