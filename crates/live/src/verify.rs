//! `--verify`: every 512-byte block written carries its own byte offset, a generation (which
//! write put it there) and a check value derived from both, and the rest of the block is a
//! pattern derived from the check value. A read compares each block against what the last
//! write submitted before it must have left: a block from the wrong place, a stale or torn
//! write, or corrupted bytes all show.
//!
//! Blocks this run did not write are checked as far as can be known: on a scratch file every
//! block carries some stamp (the fill, generation 0, or an earlier run's write), so it must
//! be a consistent block for its own offset, of any generation; on a device, whose earlier
//! content is unknown, they go unchecked. Each run numbers its writes from a random base, so
//! a stale block from an earlier run cannot pass for this run's write.

use std::collections::BTreeMap;
use std::fmt;

/// The unit stamped and checked: one sector, since every O_DIRECT transfer is whole sectors.
pub const VERIFY_BLOCK_BYTES: usize = 512;

const MAGIC: u64 = u64::from_le_bytes(*b"ELEVBLK1");
const HEADER_BYTES: usize = 32;

/// The check value of a block: a 64-bit mix of its offset and generation (SplitMix64's
/// finaliser), so neither can be changed without the other showing.
fn check_value(offset: u64, generation: u64) -> u64 {
    let mut z = offset ^ generation.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ MAGIC;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn pattern_word(check: u64, index: usize) -> u64 {
    check.rotate_left((index % 64) as u32) ^ (index as u64).wrapping_mul(0xd6e8_feb8_6659_fd93)
}

/// Writes the blocks of `buf` as generation `generation` of the blocks at `offset`.
/// `offset` and `buf.len()` are whole blocks.
pub fn stamp(buf: &mut [u8], offset: u64, generation: u64) {
    debug_assert!(offset % VERIFY_BLOCK_BYTES as u64 == 0);
    for (index, block) in buf.chunks_exact_mut(VERIFY_BLOCK_BYTES).enumerate() {
        let block_offset = offset + (index * VERIFY_BLOCK_BYTES) as u64;
        let check = check_value(block_offset, generation);
        block[0..8].copy_from_slice(&MAGIC.to_le_bytes());
        block[8..16].copy_from_slice(&block_offset.to_le_bytes());
        block[16..24].copy_from_slice(&generation.to_le_bytes());
        block[24..32].copy_from_slice(&check.to_le_bytes());
        for (word, bytes) in block[HEADER_BYTES..].chunks_exact_mut(8).enumerate() {
            bytes.copy_from_slice(&pattern_word(check, word).to_le_bytes());
        }
    }
}

/// One block that did not read back as expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The block's byte offset on the target.
    pub offset: u64,
    /// The generation it should hold (`None`: any, consistent with its offset).
    pub expected_generation: Option<u64>,
    /// What was there instead.
    pub found: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.expected_generation {
            Some(generation) => write!(
                f,
                "block at byte {}: expected generation {generation}, found {}",
                self.offset, self.found
            ),
            None => write!(
                f,
                "block at byte {}: expected a stamped block, found {}",
                self.offset, self.found
            ),
        }
    }
}

fn read_u64(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
}

/// What a block must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// The stamp of this generation.
    Generation(u64),
    /// A consistent stamp for its offset, of any generation (a scratch file's block this run
    /// did not write).
    AnyGeneration,
    /// Anything (a device's block this run did not write).
    Unknown,
}

/// Checks the block at `offset` (`block` is one block) against `expect`.
pub fn check_block(block: &[u8], offset: u64, expect: Expect) -> Result<(), Mismatch> {
    let expected = match expect {
        Expect::Generation(generation) => Some(generation),
        Expect::AnyGeneration => None,
        Expect::Unknown => return Ok(()),
    };
    let mismatch = |found: String| Mismatch { offset, expected_generation: expected, found };
    if read_u64(&block[0..8]) != MAGIC {
        return Err(mismatch("no verify header (never written by a verifying run?)".into()));
    }
    let (found_offset, generation) = (read_u64(&block[8..16]), read_u64(&block[16..24]));
    if found_offset != offset {
        return Err(mismatch(format!("a block written for byte {found_offset}")));
    }
    if read_u64(&block[24..32]) != check_value(offset, generation) {
        return Err(mismatch(format!("a corrupted header (generation field {generation})")));
    }
    if expected.is_some_and(|wanted| generation != wanted) {
        return Err(mismatch(format!("generation {generation}")));
    }
    let check = check_value(offset, generation);
    for (word, bytes) in block[HEADER_BYTES..].chunks_exact(8).enumerate() {
        if read_u64(bytes) != pattern_word(check, word) {
            let start = HEADER_BYTES + word * 8;
            return Err(mismatch(format!(
                "generation {generation} with corrupted data in bytes {start}..{} of the block",
                start + 8
            )));
        }
    }
    Ok(())
}

/// Which generation every block of the target holds, as far as this run knows: written
/// ranges with the generation of the last write submitted to them; elsewhere a stamp of any
/// generation (a scratch file) or unknown (a device).
#[derive(Clone, Debug)]
pub struct Generations {
    /// Disjoint written ranges: start byte → (end byte, generation).
    written: BTreeMap<u64, (u64, u64)>,
    /// Whether blocks this run did not write carry stamps.
    stamped: bool,
    next: u64,
}

impl Generations {
    /// A target whose blocks all carry stamps (`stamped`: a scratch file) or hold unknown
    /// data, this run numbering its writes from `first` (random per run; never 0, the fill).
    pub fn new(stamped: bool, first: u64) -> Generations {
        Generations { written: BTreeMap::new(), stamped, next: first.max(1) }
    }

    /// A run's random first generation: 63 random bits, so that runs do not share numbers.
    pub fn random_first() -> u64 {
        let mut bytes = [0u8; 8];
        // Without randomness, the time since boot in ns still differs between runs.
        if rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty()).is_err() {
            bytes = (rustix::time::clock_gettime(rustix::time::ClockId::Boottime).tv_nsec as u64)
                .to_le_bytes();
        }
        (u64::from_le_bytes(bytes) >> 1).max(1)
    }

    /// A write of `start..end` is being submitted: its generation, now what those blocks
    /// are expected to hold.
    pub fn write(&mut self, start: u64, end: u64) -> u64 {
        let generation = self.next;
        self.next += 1;
        // Trim or split the ranges the write overlaps.
        let overlapping: Vec<(u64, (u64, u64))> = self
            .written
            .range(..end)
            .rev()
            .take_while(|(_, (range_end, _))| *range_end > start)
            .map(|(&s, &v)| (s, v))
            .collect();
        for (range_start, (range_end, range_generation)) in overlapping {
            self.written.remove(&range_start);
            if range_start < start {
                self.written.insert(range_start, (start, range_generation));
            }
            if range_end > end {
                self.written.insert(end, (range_end, range_generation));
            }
        }
        self.written.insert(start, (end, generation));
        generation
    }

    /// What the block at `offset` must hold.
    pub fn expected(&self, offset: u64) -> Expect {
        match self.written.range(..=offset).next_back() {
            Some((_, &(end, generation))) if offset < end => Expect::Generation(generation),
            _ if self.stamped => Expect::AnyGeneration,
            _ => Expect::Unknown,
        }
    }

    /// Written ranges tracked (adjacent writes are not coalesced).
    pub fn ranges(&self) -> usize {
        self.written.len()
    }

    /// Every written byte range, `start..end`, in order.
    pub fn written(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.written.iter().map(|(&start, &(end, _))| (start, end))
    }
}

/// Checks a read of `buf` at `offset` against `expected` (one entry per block). Returns the
/// mismatches and how many blocks were checked (unknown ones are not).
pub fn check_read(buf: &[u8], offset: u64, expected: &[Expect]) -> (Vec<Mismatch>, u64) {
    let mut mismatches = Vec::new();
    let mut checked = 0;
    for (index, block) in buf.chunks_exact(VERIFY_BLOCK_BYTES).enumerate() {
        let expect = expected.get(index).copied().unwrap_or(Expect::Unknown);
        if expect == Expect::Unknown {
            continue;
        }
        checked += 1;
        let block_offset = offset + (index * VERIFY_BLOCK_BYTES) as u64;
        if let Err(mismatch) = check_block(block, block_offset, expect) {
            mismatches.push(mismatch);
        }
    }
    (mismatches, checked)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves a stamped block checks clean, and that each kind of damage is caught and named:
    // a block from another offset, a stale generation, a flipped data bit, a zeroed block.
    #[test]
    fn stamped_blocks_check_clean_and_damage_is_named() {
        let mut buf = vec![0u8; 4 * VERIFY_BLOCK_BYTES];
        stamp(&mut buf, 8192, 5);
        let expected = [Expect::Generation(5); 4];
        assert_eq!(check_read(&buf, 8192, &expected), (vec![], 4));
        let (moved, _) = check_read(&buf, 8704, &expected);
        assert!(moved[0].found.contains("written for byte 8192"), "{}", moved[0]);
        let (stale, _) = check_read(&buf, 8192, &[Expect::Generation(6); 4]);
        assert_eq!(stale.len(), 4);
        assert!(stale[0].found.contains("generation 5"));
        buf[VERIFY_BLOCK_BYTES + 100] ^= 1;
        let (flipped, _) = check_read(&buf, 8192, &expected);
        assert_eq!(flipped.len(), 1);
        assert!(flipped[0].found.contains("corrupted data in bytes 96..104"), "{}", flipped[0]);
        let zeroes = vec![0u8; VERIFY_BLOCK_BYTES];
        let zeroed = check_block(&zeroes, 0, Expect::AnyGeneration).unwrap_err();
        assert!(zeroed.found.contains("no verify header"));
        // Any generation passes when any is expected, but not a block from elsewhere.
        assert_eq!(check_read(&buf[..512], 8192, &[Expect::AnyGeneration]), (vec![], 1));
        assert_eq!(check_read(&buf[..512], 0, &[Expect::AnyGeneration]).0.len(), 1);
        // Unknown blocks go unchecked.
        assert_eq!(check_read(&zeroes, 0, &[Expect::Unknown]), (vec![], 0));
    }

    // Proves the generation map: the last write submitted to a block wins, partial overlaps
    // split older ranges, and unwritten blocks are any stamp (scratch) or unknown (device).
    #[test]
    fn the_last_write_to_a_block_is_expected() {
        let mut generations = Generations::new(true, 1);
        let first = generations.write(0, 8192);
        let second = generations.write(4096, 6144);
        let expect = Expect::Generation;
        assert_eq!(generations.expected(0), expect(first));
        assert_eq!(generations.expected(4096), expect(second));
        assert_eq!(generations.expected(5632), expect(second));
        assert_eq!(generations.expected(6144), expect(first));
        assert_eq!(generations.expected(8192), Expect::AnyGeneration);
        let third = generations.write(2048, 16384);
        assert_eq!(generations.expected(1536), expect(first));
        assert_eq!(generations.expected(4096), expect(third));
        assert_eq!(generations.expected(16383), expect(third));
        assert_eq!(generations.ranges(), 2);
        assert_eq!(Generations::new(false, 1).expected(0), Expect::Unknown);
        let (a, b) = (Generations::random_first(), Generations::random_first());
        assert!(a != b && a > 0 && b > 0, "runs number their writes apart");
    }
}
