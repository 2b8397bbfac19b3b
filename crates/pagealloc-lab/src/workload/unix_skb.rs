//! How an AF_UNIX stream write reaches the page allocator: mirrors the sizing in
//! unix_stream_sendmsg() and the block carving in alloc_skb_with_frags() (Linux 6.6).
//!
//! A write is cut into skbs of at most `SKB_MAX_HEAD(0) + UNIX_SKB_FRAGS_SZ` bytes. Each skb
//! has a linear head (kmalloc'd: slab memory, not modelled here) and paged data rounded up to
//! whole pages, allocated as compound blocks whose order starts at that of
//! `UNIX_SKB_FRAGS_SZ` (order 3) and steps down while the data left is smaller than a
//! block. lmbench's 64 KiB write therefore becomes blocks of order 3, then 2, 1 and 0: the
//! receiver frees an order-0 page before every write's order-3 block, which is what makes
//! patch 1 of the 2023 series (free_high only after consecutive high-order frees) matter.

const PAGE_BYTES: u64 = 4096;

/// Paged data one AF_UNIX skb may carry (UNIX_SKB_FRAGS_SZ: 32 KiB).
const FRAGS_BYTES: u64 = 32_768;

/// Order of `FRAGS_BYTES`: the largest block alloc_skb_with_frags() asks for here.
const MAX_ORDER: u8 = 3;

/// `struct skb_shared_info` rounded to a cache line, x86-64 with 17 fragments: 320 bytes.
const SHARED_INFO_BYTES: u64 = 320;

/// SKB_MAX_HEAD(0): the linear head that fits one page beside the shared info.
const MAX_HEAD_BYTES: u64 = PAGE_BYTES - SHARED_INFO_BYTES;

/// `sizeof(struct sk_buff)` on x86-64, cache-line aligned (SKB_DATA_ALIGN): 256 bytes.
const SK_BUFF_BYTES: u64 = 256;

/// SKB_SMALL_HEAD_CACHE_SIZE (Linux 6.3 and later): a head whose allocation fits takes the
/// small-head slab instead of a kmalloc class. x86-64 with the usual headers: the larger of
/// MAX_TCP_HEADER (320) and GRO_MAX_HEAD with its padding (368, aligned to 384), plus the
/// shared info (320).
const SMALL_HEAD_CACHE_BYTES: u64 = 704;

/// One page-allocator block of a write: its order and the bytes of data it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataBlock {
    pub order: u8,
    pub bytes: u64,
}

/// One skb of a write: the blocks of its paged data, the bytes it carries, and its
/// truesize, what it charges to the sender's send buffer while queued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skb {
    pub blocks: Vec<DataBlock>,
    pub bytes: u64,
    pub truesize_bytes: u64,
}

/// The skbs a write of `write_bytes` is cut into, in the order they are queued, for a
/// socket whose send buffer is `send_buffer_bytes`.
pub fn write_skbs(write_bytes: u64, send_buffer_bytes: u64) -> Vec<Skb> {
    // "Keep two messages in the pipe": an skb is at most half the send buffer.
    let skb_cap_bytes = (send_buffer_bytes / 2).saturating_sub(64).clamp(1, MAX_HEAD_BYTES + FRAGS_BYTES);
    let mut skbs = Vec::new();
    let mut left_bytes = write_bytes;
    // Bounded: every skb carries at least one byte.
    while left_bytes > 0 {
        let skb_bytes = left_bytes.min(skb_cap_bytes);
        let paged_bytes = skb_bytes.saturating_sub(MAX_HEAD_BYTES).next_multiple_of(PAGE_BYTES).min(skb_bytes);
        let mut blocks = Vec::new();
        skb_data_blocks(paged_bytes, &mut blocks);
        let truesize_bytes = truesize_bytes(skb_bytes - paged_bytes, &blocks);
        skbs.push(Skb { blocks, bytes: skb_bytes, truesize_bytes });
        left_bytes -= skb_bytes;
    }
    skbs
}

/// The blocks a write of `write_bytes` allocates, in allocation (and freeing) order, for a
/// socket whose send buffer is `send_buffer_bytes`.
pub fn write_blocks(write_bytes: u64, send_buffer_bytes: u64) -> Vec<DataBlock> {
    write_skbs(write_bytes, send_buffer_bytes).into_iter().flat_map(|skb| skb.blocks).collect()
}

/// An skb's truesize: the slab object its linear head and shared info take (the small-head
/// slab, else a kmalloc class; __alloc_skb() charges the whole object), the sk_buff itself,
/// and every page block whole (alloc_skb_with_frags() charges the block, not the bytes in
/// it).
fn truesize_bytes(head_bytes: u64, blocks: &[DataBlock]) -> u64 {
    let head_object_bytes = head_bytes.next_multiple_of(64) + SHARED_INFO_BYTES;
    let head_alloc_bytes = if head_object_bytes <= SMALL_HEAD_CACHE_BYTES {
        SMALL_HEAD_CACHE_BYTES
    } else {
        head_object_bytes.next_power_of_two()
    };
    let pages_bytes: u64 = blocks.iter().map(|block| PAGE_BYTES << block.order).sum();
    head_alloc_bytes + SK_BUFF_BYTES + pages_bytes
}

/// Carves one skb's paged data: the order only ever steps down, while a block of it would
/// exceed the (page-rounded) data left.
fn skb_data_blocks(mut data_bytes: u64, blocks: &mut Vec<DataBlock>) {
    let mut order = MAX_ORDER;
    while data_bytes > 0 {
        let pages_left = data_bytes.div_ceil(PAGE_BYTES);
        while order > 0 && pages_left < 1 << order {
            order -= 1;
        }
        let bytes = data_bytes.min(PAGE_BYTES << order);
        blocks.push(DataBlock { order, bytes });
        data_bytes -= bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn orders(blocks: &[DataBlock]) -> Vec<u8> {
        blocks.iter().map(|block| block.order).collect()
    }

    const SEND_BUFFER: u64 = 212_992;

    #[test]
    fn lmbench_64k_write_is_two_skbs_of_order_3_then_2_1_0() {
        let blocks = write_blocks(65_536, SEND_BUFFER);
        assert_eq!(orders(&blocks), [3, 2, 1, 0]);
        // First skb: 3776 bytes of head, 32 KiB paged; second: 28992 bytes, 320 of head.
        assert_eq!(blocks.iter().map(|b| b.bytes).collect::<Vec<_>>(), [32_768, 16_384, 8_192, 4_096]);
        let paged: u64 = blocks.iter().map(|b| b.bytes).sum();
        assert_eq!(65_536 - paged, MAX_HEAD_BYTES + SHARED_INFO_BYTES, "the rest sits in the two linear heads");
    }

    #[test]
    fn an_skb_charges_its_head_class_its_sk_buff_and_whole_blocks() {
        let skbs = write_skbs(65_536, SEND_BUFFER);
        // Head 3776 + 320 bytes: the 4 KiB class; head 320 + 320: the small-head slab.
        let truesizes: Vec<u64> = skbs.iter().map(|skb| skb.truesize_bytes).collect();
        assert_eq!(truesizes, [4096 + 256 + 32_768, 704 + 256 + 28_672]);
        assert_eq!(skbs.iter().map(|skb| skb.bytes).sum::<u64>(), 65_536);
        // A 4 KiB write is all paged: its empty head takes the small-head slab too.
        assert_eq!(write_skbs(4096, SEND_BUFFER)[0].truesize_bytes, 704 + 256 + 4096);
        // A head past the slab takes a power-of-two class: 1000 + 320 bytes, 2 KiB.
        assert_eq!(truesize_bytes(1000, &[]), 2048 + 256);
    }

    #[test]
    fn small_writes_stay_in_the_linear_head() {
        assert!(write_blocks(100, SEND_BUFFER).is_empty());
        assert!(write_blocks(MAX_HEAD_BYTES, SEND_BUFFER).is_empty());
        // One byte more: the paged part rounds up to a page, which then takes the whole skb.
        assert_eq!(write_blocks(MAX_HEAD_BYTES + 1, SEND_BUFFER), [DataBlock { order: 0, bytes: MAX_HEAD_BYTES + 1 }]);
    }

    #[test]
    fn every_byte_beyond_the_heads_is_in_a_block_no_larger_than_needed() {
        for write_bytes in [1u64, 5_000, 36_544, 36_545, 65_536, 100_000, 1 << 20] {
            let blocks = write_blocks(write_bytes, SEND_BUFFER);
            for block in &blocks {
                assert!(block.bytes > 0 && block.bytes <= PAGE_BYTES << block.order, "{write_bytes}: {block:?}");
                assert!(block.order <= MAX_ORDER);
            }
            let paged: u64 = blocks.iter().map(|b| b.bytes).sum();
            let skbs = write_bytes.div_ceil(MAX_HEAD_BYTES + FRAGS_BYTES);
            assert!(paged <= write_bytes && write_bytes - paged <= skbs * MAX_HEAD_BYTES, "{write_bytes}");
        }
    }

    #[test]
    fn a_small_send_buffer_caps_the_skb() {
        // Half of 16 KiB less 64 bytes per skb: 8128 bytes. Their 4352 bytes beyond a full
        // head round up to two pages, more than the skb holds: all of it is paged, the head
        // is empty.
        let blocks = write_blocks(3 * 8_128, 16_384);
        assert_eq!(orders(&blocks), [1, 1, 1]);
        assert!(blocks.iter().all(|block| block.bytes == 8_128));
    }
}
