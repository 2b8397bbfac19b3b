//! The receiving task: copies queued messages out and frees what they release (their own
//! blocks, and carved blocks whose last fragment it drops).

use super::socket::{release_fragment, Message, Socket};
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

    pub(super) fn queue_empty(&self) -> bool {
        self.socket.lock().expect("unpoisoned").queue.is_empty()
    }

    pub(super) fn step(&mut self, env: &mut dyn Env) {
        let message = self.socket.lock().expect("unpoisoned").queue.pop_front();
        match message {
            None => env.compute(self.config.poll_ns),
            Some(message) => {
                env.compute(self.config.receive_per_message_ns);
                self.consume(env, message, true);
            }
        }
    }

    pub(super) fn finish(&mut self, env: &mut dyn Env) {
        loop {
            let message = self.socket.lock().expect("unpoisoned").queue.pop_front();
            let Some(message) = message else { break };
            self.consume(env, message, false);
        }
    }
}
