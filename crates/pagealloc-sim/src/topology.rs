//! Machine topology: sockets, cores, SMT threads and cache sizes. CPU numbering follows
//! Linux on Intel servers: first one thread of every core of every socket, then the SMT
//! siblings (cpu and cpu + cores_total are siblings).

use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Topology {
    pub name: &'static str,
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    /// Private L2 per core.
    pub l2_bytes_per_core: u64,
    /// Last-level cache per socket, all its instances together.
    pub llc_bytes_per_socket: u64,
    /// LLC instances per socket, each shared by an equal run of the socket's cores (1 on
    /// Intel servers; one per core complex die on AMD EPYC).
    pub llcs_per_socket: u32,
}

/// How far apart two CPUs are, for cache-line transfers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Distance {
    SameCpu,
    /// Same core, other hardware thread: shares L1/L2.
    SmtSibling,
    /// Same socket and LLC instance.
    SameSocket,
    /// Same socket, another LLC instance (another core complex die).
    SameSocketOtherLlc,
    OtherSocket,
}

impl Topology {
    /// 2-socket Sapphire Rapids-class server, 2 x 56 cores x 2 threads = 224 CPUs, 105 MiB LLC
    /// per socket, 2 MiB L2 per core (the kbuild machine of the 2023 seed).
    pub const SERVER_224: Topology = Topology {
        name: "2s-224cpu",
        sockets: 2,
        cores_per_socket: 56,
        threads_per_core: 2,
        l2_bytes_per_core: 2 << 20,
        llc_bytes_per_socket: 105 << 20,
        llcs_per_socket: 1,
    };

    /// 2-socket AMD EPYC 9965 (Turin, Zen 5c), 2 x 192 cores x 2 threads = 768 CPUs: 12
    /// core complex dies per socket, each of 16 cores sharing its own 32 MiB L3 (384 MiB per
    /// socket); 1 MiB L2 per core.
    pub const SERVER_768: Topology = Topology {
        name: "2s-768cpu",
        sockets: 2,
        cores_per_socket: 192,
        threads_per_core: 2,
        l2_bytes_per_core: 1 << 20,
        llc_bytes_per_socket: 384 << 20,
        llcs_per_socket: 12,
    };

    /// 2-socket Ice Lake-class server, 2 x 32 cores x 2 threads = 128 CPUs, 48 MiB LLC per
    /// socket, 1.25 MiB L2 per core (the SCTP and AF_UNIX machine of the 2023 seed).
    pub const SERVER_128: Topology = Topology {
        name: "2s-128cpu",
        sockets: 2,
        cores_per_socket: 32,
        threads_per_core: 2,
        l2_bytes_per_core: 1280 << 10,
        llc_bytes_per_socket: 48 << 20,
        llcs_per_socket: 1,
    };

    /// 2-socket CascadeLake-class server, 2 x 20 cores x 2 threads = 80 CPUs, 27.5 MiB LLC
    /// per socket, 1 MiB L2 per core (the 2022 seed's page_fault1 and trunc machine).
    pub const SERVER_80: Topology = Topology {
        name: "2s-80cpu",
        sockets: 2,
        cores_per_socket: 20,
        threads_per_core: 2,
        l2_bytes_per_core: 1 << 20,
        llc_bytes_per_socket: 55 << 19,
        llcs_per_socket: 1,
    };

    /// Xeon E5-2699 v4 (Broadwell-EP), 2 sockets: 22 cores x 2 threads each, 256 KiB L2 per
    /// core, 55 MiB LLC per socket (Intel ARK).
    pub const SERVER_88: Topology = Topology {
        name: "2s-88cpu",
        sockets: 2,
        cores_per_socket: 22,
        threads_per_core: 2,
        l2_bytes_per_core: 1 << 18,
        llc_bytes_per_socket: 55 << 20,
        llcs_per_socket: 1,
    };

    /// 2-socket Haswell-EP server, 2 x 12 cores x 2 threads = 48 CPUs, 30 MiB LLC per
    /// socket, 256 KiB L2 per core (Xeon E5-2670 v3, Intel ARK): the 2018 fragmentation
    /// seed's 2-socket machine, whose 5 THP threads mean 24 CPUs per socket.
    pub const SERVER_48: Topology = Topology {
        name: "2s-48cpu",
        sockets: 2,
        cores_per_socket: 12,
        threads_per_core: 2,
        l2_bytes_per_core: 256 << 10,
        llc_bytes_per_socket: 30 << 20,
        llcs_per_socket: 1,
    };

    /// 1-socket desktop-class part with a small cache (the "small CPU cache" Skylake of the
    /// 2022 seed): 4 cores x 2 threads, 8 MiB LLC, 256 KiB L2.
    pub const SMALL_CACHE_8: Topology = Topology {
        name: "1s-8cpu-small-cache",
        sockets: 1,
        cores_per_socket: 4,
        threads_per_core: 2,
        l2_bytes_per_core: 256 << 10,
        llc_bytes_per_socket: 8 << 20,
        llcs_per_socket: 1,
    };

    /// A single-socket topology of `cpus` CPUs without SMT (tests, small runs).
    pub fn flat(cpus: u32) -> Topology {
        Topology {
            name: "flat",
            sockets: 1,
            cores_per_socket: cpus.max(1),
            threads_per_core: 1,
            l2_bytes_per_core: 1 << 20,
            llc_bytes_per_socket: (cpus.max(1) as u64) << 20,
            llcs_per_socket: 1,
        }
    }

    pub fn cpus(&self) -> u32 {
        self.sockets * self.cores_per_socket * self.threads_per_core
    }

    fn cores_total(&self) -> u32 {
        self.sockets * self.cores_per_socket
    }

    /// (socket, core within the machine) of a CPU.
    pub fn place(&self, cpu: u32) -> (u32, u32) {
        let core = cpu % self.cores_total();
        (core / self.cores_per_socket, core)
    }

    pub fn distance(&self, a: u32, b: u32) -> Distance {
        if a == b {
            return Distance::SameCpu;
        }
        let ((socket_a, core_a), (socket_b, core_b)) = (self.place(a), self.place(b));
        if core_a == core_b {
            Distance::SmtSibling
        } else if socket_a != socket_b {
            Distance::OtherSocket
        } else if self.llc(a) == self.llc(b) {
            Distance::SameSocket
        } else {
            Distance::SameSocketOtherLlc
        }
    }

    /// The LLC instance of a CPU, numbered across the machine (socket by socket).
    pub fn llc(&self, cpu: u32) -> u32 {
        let (socket, core) = self.place(cpu);
        let core_in_socket = core % self.cores_per_socket;
        socket * self.llcs_per_socket + core_in_socket / self.cores_per_llc()
    }

    /// LLC instances in the machine.
    pub fn llcs(&self) -> u32 {
        self.sockets * self.llcs_per_socket
    }

    fn cores_per_llc(&self) -> u32 {
        assert!(
            self.llcs_per_socket >= 1 && self.cores_per_socket.is_multiple_of(self.llcs_per_socket),
            "{}: {} cores per socket in {} LLC instances",
            self.name,
            self.cores_per_socket,
            self.llcs_per_socket
        );
        self.cores_per_socket / self.llcs_per_socket
    }

    /// One LLC instance's size.
    pub fn llc_bytes(&self) -> u64 {
        self.llc_bytes_per_socket / u64::from(self.llcs_per_socket.max(1))
    }

    /// A CPU's share of its core's L2 (split between SMT threads).
    pub fn l2_share_bytes(&self) -> u64 {
        self.l2_bytes_per_core / self.threads_per_core as u64
    }

    /// Socket of a CPU.
    pub fn socket(&self, cpu: u32) -> u32 {
        self.place(cpu).0
    }

    /// CPUs sharing one LLC instance.
    pub fn cpus_per_llc(&self) -> u32 {
        self.cores_per_llc() * self.threads_per_core
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_style_numbering_places_siblings_one_core_count_apart() {
        let topology = Topology::SERVER_224;
        assert_eq!(topology.cpus(), 224);
        assert_eq!(topology.distance(0, 112), Distance::SmtSibling);
        assert_eq!(topology.distance(0, 1), Distance::SameSocket);
        assert_eq!(topology.distance(0, 56), Distance::OtherSocket);
        assert_eq!(topology.distance(55, 167), Distance::SmtSibling);
        assert_eq!(topology.distance(3, 3), Distance::SameCpu);
    }

    #[test]
    fn core_complexes_split_a_socket_into_llc_instances() {
        let turin = Topology::SERVER_768;
        assert_eq!((turin.cpus(), turin.llcs(), turin.cpus_per_llc()), (768, 24, 32));
        assert_eq!(turin.llc_bytes(), 32 << 20);
        assert_eq!(turin.distance(0, 384), Distance::SmtSibling);
        assert_eq!(turin.distance(0, 15), Distance::SameSocket, "one die");
        assert_eq!(turin.distance(0, 16), Distance::SameSocketOtherLlc);
        assert_eq!(turin.distance(0, 16 + 384), Distance::SameSocketOtherLlc);
        assert_eq!(turin.distance(191, 192), Distance::OtherSocket);
        assert_eq!((turin.llc(0), turin.llc(16), turin.llc(192), turin.llc(767)), (0, 1, 12, 23));
        // One LLC per socket: every same-socket pair shares it.
        let xeon = Topology::SERVER_224;
        assert_eq!((xeon.llcs(), xeon.cpus_per_llc(), xeon.llc(111)), (2, 112, 1));
        assert_eq!(xeon.distance(0, 55), Distance::SameSocket);
    }

    #[test]
    fn l2_share_splits_between_siblings() {
        assert_eq!(Topology::SERVER_128.l2_share_bytes(), (1280 << 10) / 2);
        assert_eq!(Topology::SERVER_128.socket(100), 1);
    }
}
