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

mod placement;
mod receiver;
mod roles;
mod sender;
mod socket;

use serde_json::json;

use super::unix_skb;
use super::{CpuTask, Idle, Workload};
use crate::machine::kernel_costs::at_size;
use crate::machine::KernelCosts;
use placement::{CoLocatedPair, Pair, PairCpu};
use roles::RoleSchedule;
use socket::Socket;

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
    /// Receiver's protocol work per message (copy-out bookkeeping, skb release).
    pub receive_per_message_ns: u64,
    /// How often a side with nothing to do looks again: a simulation step, not a cost (a
    /// blocked side sleeps; see `wake_ns`).
    pub poll_ns: u64,
    /// A blocked side resumes this long after the other side's write (a reader's data) or
    /// free (a writer's room) woke it: a wake-up of a task on another CPU.
    pub wake_ns: u64,
    /// Both tasks on one CPU: each turn's switch (a context switch).
    pub switch_ns: u64,
    /// A message whose writer and reader run on two CPUs: the socket state moving between
    /// their caches, charged in halves to each side (nothing when they share a CPU).
    pub cross_cpu_ns: u64,
    /// A blocked writer is woken once the queue is down to this many messages: af_unix
    /// wakes at a quarter of the send buffer (unix_writable()), TCP when its free space is
    /// half the queued data (sk_stream_is_writeable(): two thirds of the buffer queued).
    pub writable_messages: usize,
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
            wake_ns: 0,
            switch_ns: 500,
            cross_cpu_ns: 0,
            writable_messages: match kind {
                PairKind::Unix => (SOCKET_BUFFER_BYTES / 4 / message_bytes) as usize,
                PairKind::Netperf => (SOCKET_BUFFER_BYTES * 2 / 3 / message_bytes) as usize,
            },
            role_swap_ns: None,
            co_located: false,
        }
    }
}

impl Pairs {
    /// The per-message kernel work on a profiled machine: the one-thread message cost at
    /// this size, less what the simulator charges apart (the kernel allocator's path for
    /// the message's blocks, and its pages touched twice, written and read, from the L2, as
    /// one thread touches them), split in halves between the write and the read; and the
    /// socket's cross-CPU cost per message.
    pub fn with_costs(self, kernel: &KernelCosts, calibration: &pagealloc_sim::Calibration) -> Pairs {
        let calls = &kernel.kernel_calls;
        let pages = self.message_bytes.div_ceil(4096);
        let (measured_ns, paths_ns, cross_cpu_ns) = match self.kind {
            PairKind::Unix => {
                let blocks = unix_skb::write_blocks(self.message_bytes, SOCKET_BUFFER_BYTES);
                let paths_ns: u64 = blocks.iter().map(|b| calls.alloc_ns(b.order) + calls.free_ns(b.order)).sum();
                (at_size(&kernel.unix_message_ns, self.message_bytes), paths_ns, kernel.unix_cross_cpu_ns)
            }
            PairKind::Netperf => {
                let block_ns = calls.alloc_ns(FRAG_ORDER) + calls.free_ns(FRAG_ORDER);
                let paths_ns = block_ns * self.message_bytes / FRAG_BYTES;
                (at_size(&kernel.tcp_message_ns, self.message_bytes), paths_ns, kernel.tcp_cross_cpu_ns)
            }
        };
        let touches_ns = 2 * pages * calibration.page_l2_hit_ns;
        let half_ns = measured_ns.saturating_sub(paths_ns.saturating_add(touches_ns)) / 2;
        Pairs {
            per_message_ns: half_ns,
            receive_per_message_ns: half_ns,
            wake_ns: kernel.wake_other_cpu_ns,
            switch_ns: kernel.switch_same_cpu_ns,
            cross_cpu_ns,
            ..self
        }
    }
}

impl Pairs {
    /// Each side's share of a message's cross-CPU cost: half, or nothing when both tasks
    /// share a CPU.
    pub(super) fn cross_cpu_share_ns(&self) -> u64 {
        if self.co_located {
            0
        } else {
            self.cross_cpu_ns / 2
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
            "wake_ns": self.wake_ns,
            "switch_ns": self.switch_ns,
            "cross_cpu_ns": if self.co_located { 0 } else { self.cross_cpu_ns },
            "writable_messages": self.writable_messages,
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
    fn each_side_pays_half_the_cross_cpu_cost_unless_both_share_a_cpu() {
        let machine = crate::machine::seeds::reference();
        let kernel =
            crate::machine::KernelCosts { unix_cross_cpu_ns: 300, tcp_cross_cpu_ns: 500, ..machine.kernel.clone() };
        let unix = Pairs::new(PairKind::Unix, 4096).with_costs(&kernel, &machine.calibration);
        assert_eq!((unix.cross_cpu_ns, unix.cross_cpu_share_ns()), (300, 150));
        let tcp = Pairs::new(PairKind::Netperf, 4096).with_costs(&kernel, &machine.calibration);
        assert_eq!(tcp.cross_cpu_share_ns(), 250);
        let together = Pairs { co_located: true, ..unix };
        assert_eq!(together.cross_cpu_share_ns(), 0);
        assert_eq!(together.params()["cross_cpu_ns"], 0);
    }
}
