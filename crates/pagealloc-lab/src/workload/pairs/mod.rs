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
    /// The sender waits while this much is queued and unread: AF_UNIX counts skbs'
    /// truesize against the send buffer (sock_alloc_send_pskb() waits while sk_wmem_alloc
    /// reaches sk_sndbuf), netperf whole messages that fit the buffer.
    pub send_buffer_bytes: u64,
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
    /// What that wake-up costs the side that wakes (on a guest, an interrupt to a halted
    /// vCPU through the hypervisor).
    pub waker_ns: u64,
    /// Both tasks on one CPU: each turn's switch (a context switch).
    pub switch_ns: u64,
    /// A message whose writer and reader run on two CPUs: the socket state moving between
    /// their caches, charged in halves to each side (nothing when they share a CPU).
    pub cross_cpu_ns: u64,
    /// A blocked writer is woken once the queue is down to this many bytes: af_unix wakes
    /// at a quarter of the send buffer (unix_writable()), TCP when its free space is half the
    /// queued data (sk_stream_is_writeable(): two thirds of the buffer's messages queued).
    pub writable_bytes: u64,
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
        let (send_buffer_bytes, writable_bytes) = match kind {
            PairKind::Unix => (SOCKET_BUFFER_BYTES, SOCKET_BUFFER_BYTES / 4),
            PairKind::Netperf => (
                (SOCKET_BUFFER_BYTES / message_bytes).max(1) * message_bytes,
                SOCKET_BUFFER_BYTES * 2 / 3 / message_bytes * message_bytes,
            ),
        };
        Pairs {
            kind,
            message_bytes,
            send_buffer_bytes,
            per_message_ns: 1_500,
            receive_per_message_ns: 2_000,
            poll_ns: 500,
            wake_ns: 0,
            waker_ns: 0,
            switch_ns: 500,
            cross_cpu_ns: 0,
            writable_bytes,
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
            waker_ns: kernel.wake_waker_ns,
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

    /// What waking the other side costs: nothing when both tasks share a CPU (a context
    /// switch, charged as such).
    pub(super) fn waker_cost_ns(&self) -> u64 {
        if self.co_located {
            0
        } else {
            self.waker_ns
        }
    }

    /// A side's cost for one skb of an AF_UNIX write: its bytes' share of `per_message_ns`
    /// and of the side's cross-CPU share, from byte `before` of the write to `after`,
    /// rounded so that a write's skbs add up to the whole.
    pub(super) fn skb_share_ns(&self, per_message_ns: u64, before: u64, after: u64) -> u64 {
        debug_assert!(before < after && after <= self.message_bytes, "an skb is part of the write");
        let total_ns = u128::from(per_message_ns + self.cross_cpu_share_ns());
        let upto_ns = |bytes: u64| (total_ns * u128::from(bytes) / u128::from(self.message_bytes)) as u64;
        upto_ns(after) - upto_ns(before)
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
        let mut params = json!({
            "kind": self.kind,
            "message_bytes": self.message_bytes,
            "frag_orders": match self.kind {
                PairKind::Netperf => vec![FRAG_ORDER],
                PairKind::Unix => unix_skb::write_blocks(self.message_bytes, SOCKET_BUFFER_BYTES)
                    .iter()
                    .map(|block| block.order)
                    .collect(),
            },
            "per_message_ns": self.per_message_ns,
            "receive_per_message_ns": self.receive_per_message_ns,
            "poll_ns": self.poll_ns,
            "wake_ns": self.wake_ns,
            "waker_ns": self.waker_ns,
            "switch_ns": self.switch_ns,
            "cross_cpu_ns": if self.co_located { 0 } else { self.cross_cpu_ns },
            "role_swap_ns": if self.co_located { None } else { self.role_swap_ns },
            "co_located": self.co_located,
        });
        // The buffer in the unit each kind counts it in.
        match self.kind {
            PairKind::Unix => {
                params["send_buffer_bytes"] = json!(self.send_buffer_bytes);
                params["writable_bytes"] = json!(self.writable_bytes);
            }
            PairKind::Netperf => {
                params["queue_messages"] = json!(self.send_buffer_bytes / self.message_bytes);
                params["writable_messages"] = json!(self.writable_bytes / self.message_bytes);
            }
        }
        params
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
        let together = Pairs { co_located: true, waker_ns: 9_000, ..unix.clone() };
        assert_eq!(together.cross_cpu_share_ns(), 0);
        assert_eq!(together.params()["cross_cpu_ns"], 0);
        assert_eq!(together.waker_cost_ns(), 0, "a same-CPU wake-up is the turn's switch");
        assert_eq!(Pairs { waker_ns: 9_000, ..unix }.waker_cost_ns(), 9_000);
    }

    #[test]
    fn a_side_that_wakes_the_other_pays_for_the_wake_up() {
        let words = ["run", "unix-pairs", "--cpus", "2", "--duration-ms", "20", "--preset", "mainline"];
        let args = crate::run::RunArgs::try_parse_words(&words).unwrap();
        let free = Pairs { wake_ns: 20_000, ..Pairs::new(PairKind::Unix, 65_536) };
        let paying = Pairs { waker_ns: 50_000, ..free.clone() };
        let free_run = crate::run::run_sim(&free, &args).unwrap();
        let paying_run = crate::run::run_sim(&paying, &args).unwrap();
        let wakes = paying_run.recorded["receiver_sleeps"] + paying_run.recorded.get("sender_sleeps").unwrap_or(&0.0);
        assert!(wakes > 10.0, "{wakes} wake-ups");
        assert!(paying_run.work_units < free_run.work_units, "{paying_run:?}");
    }

    /// Runs `pairs` on 2 simulated CPUs for 10 ms with a stalled reader (it takes the first
    /// skb or message, spends a second on it, and sleeps a second once woken): what the
    /// writer completes before the send buffer stops it, and how often it fell asleep.
    fn writes_before_the_buffer_is_full(pairs: &Pairs) -> (u64, f64) {
        let words = ["run", "unix-pairs", "--cpus", "2", "--duration-ms", "10", "--preset", "mainline"];
        let args = crate::run::RunArgs::try_parse_words(&words).unwrap();
        let second_ns = 1_000_000_000;
        let stalled = Pairs { wake_ns: second_ns, receive_per_message_ns: second_ns, ..pairs.clone() };
        let report = crate::run::run_sim(&stalled, &args).unwrap();
        (report.work_units, report.recorded.get("sender_sleeps").copied().unwrap_or(0.0))
    }

    #[test]
    fn a_writer_queues_skb_by_skb_until_their_truesize_fills_the_send_buffer() {
        // A 64 KiB write is two skbs charging 37,120 and 29,632 bytes, each queued while the
        // charge is under the 212,992-byte buffer. Less the skb the reader took, the fourth
        // write's second skb goes in at 200,256 bytes; then 229,888 are charged: the writer
        // sleeps.
        assert_eq!(writes_before_the_buffer_is_full(&Pairs::new(PairKind::Unix, 65_536)), (4, 1.0));
        // 4 KiB writes charge 5,056 bytes each: 42 queued (212,352) leave room for one more,
        // the 44th write with the reader's.
        assert_eq!(writes_before_the_buffer_is_full(&Pairs::new(PairKind::Unix, 4096)), (44, 1.0));
        // netperf counts whole messages: 52 of 4 KiB fit, and the reader's.
        assert_eq!(writes_before_the_buffer_is_full(&Pairs::new(PairKind::Netperf, 4096)), (53, 1.0));
    }

    #[test]
    fn a_write_s_skbs_share_its_costs_in_proportion_to_their_bytes_and_add_up() {
        let pairs = Pairs { cross_cpu_ns: 301, ..Pairs::new(PairKind::Unix, 65_536) };
        let skbs = unix_skb::write_skbs(65_536, SOCKET_BUFFER_BYTES);
        let mut before = 0;
        let mut total_ns = 0;
        for skb in &skbs {
            total_ns += pairs.skb_share_ns(1_001, before, before + skb.bytes);
            before += skb.bytes;
        }
        assert_eq!(total_ns, 1_001 + 150, "the per-message cost and the side's cross-CPU half");
        assert_eq!(pairs.skb_share_ns(1_000, 0, 32_768), 575, "half the write: half of 1,150");
    }
}
