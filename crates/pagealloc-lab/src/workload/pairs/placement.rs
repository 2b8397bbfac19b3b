//! Placement of a pair's two tasks on CPUs: one task per CPU following the role schedule
//! ([`PairCpu`]), or both on one CPU taking turns ([`CoLocatedPair`]).

use super::receiver::Receiver;
use super::roles::RoleSchedule;
use super::sender::Sender;
use super::socket::Socket;
use super::{Pairs, SOCKET_BUFFER_BYTES};
use crate::workload::unix_skb;
use crate::workload::{CpuTask, Env, Step};

/// A pair's two tasks over one socket; whoever runs them, the sender's page_frag block and
/// the queue live in the socket.
pub(super) struct Pair {
    sender: Sender,
    receiver: Receiver,
}

impl Pair {
    pub(super) fn new(config: &Pairs, socket: &Socket) -> Pair {
        Pair {
            sender: Sender {
                config: config.clone(),
                socket: socket.clone(),
                unix_skbs: unix_skb::write_skbs(config.message_bytes, SOCKET_BUFFER_BYTES),
                next_skb: 0,
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

/// One CPU of a pair: it runs the sender or the receiver, whichever the role schedule puts
/// on it now. The sender's state (its page_frag block) lives in the socket, so it moves with
/// the task as in the kernel (a task's page_frag is per task).
pub(super) struct PairCpu {
    /// 0: runs the sender until the first swap; 1: the receiver.
    pub(super) slot: u8,
    pub(super) pair: Pair,
    pub(super) roles: RoleSchedule,
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
/// until it is empty and sleeps; each switch costs `switch_ns`. Frees and the allocations that
/// follow them meet in one pageset, so freed blocks can be reused while still cache-hot.
pub(super) struct CoLocatedPair {
    pub(super) pair: Pair,
    pub(super) sending: bool,
}

impl CpuTask for CoLocatedPair {
    fn step(&mut self, env: &mut dyn Env) -> Step {
        let Pair { sender, receiver } = &mut self.pair;
        let switch = if self.sending { sender.queue_full() } else { receiver.queue_empty() };
        if switch {
            self.sending = !self.sending;
            env.compute(sender.config.switch_ns);
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
