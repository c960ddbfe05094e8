//! The arguments of capi_calls' calls: handle selections, configs and
//! options whose `size` is right or wrong, places good and bad.

use arbitrary::Arbitrary;

use crate::capi::*;

/// A pool argument.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub(crate) enum PoolSel {
    Null,
    Global,
    Live(u8),
    Destroyed(u8),
    Garbage(u64),
}

/// A group argument.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub(crate) enum GroupSel {
    Null,
    Live(u8),
    Destroyed(u8),
    Garbage(u64),
}

/// A `size` field: right, below the first version's, above the largest
/// accepted, or larger with a tail (zero: accepted; not: refused).
#[derive(Arbitrary, Clone, Copy, Debug)]
pub(crate) enum SizeSel {
    Right,
    Zero,
    Short,
    LongZeroTail,
    LongNonzeroTail,
    Huge,
}

#[derive(Arbitrary, Clone, Copy, Debug)]
pub(crate) enum ThreadsSel {
    Default,
    One,
    Two,
    JustTooMany,
    Absurd(u64),
}

#[derive(Arbitrary, Clone, Copy, Debug)]
pub(crate) struct PoolCfg {
    pub(crate) null_config: bool,
    pub(crate) size: SizeSel,
    pub(crate) threads: ThreadsSel,
    pub(crate) policy: u8,
    pub(crate) pin: u8,
    pub(crate) null_out: bool,
}

/// A C struct with room for a longer `size` than this library's.
#[repr(C, align(8))]
pub(crate) struct Padded<T> {
    pub(crate) value: T,
    tail: [u8; 64],
}

impl<T> Padded<T> {
    /// The struct with `size` set as `sel` says, and whether that size is
    /// refused.
    pub(crate) fn new(
        mut value: T,
        set_size: impl Fn(&mut T, usize),
        min: usize,
        sel: SizeSel,
    ) -> (Self, bool) {
        let full = std::mem::size_of::<T>();
        let mut tail = [0u8; 64];
        let (size, bad) = match sel {
            SizeSel::Right => (full, false),
            SizeSel::Zero => (0, true),
            SizeSel::Short => (min - 1, true),
            SizeSel::LongZeroTail => (full + 64, false),
            SizeSel::LongNonzeroTail => {
                tail[5] = 1;
                (full + 64, true)
            }
            // Above the largest size read (4096): refused before any read.
            SizeSel::Huge => (1 << 20, true),
        };
        set_size(&mut value, size);
        (Padded { value, tail }, bad)
    }
}

/// Where a task is placed.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub(crate) enum PlaceSel {
    None,
    Any,
    Node(u8),
    Worker(u8),
    /// The input's buffer, `len` bytes of it (0: refused).
    Data(u16),
    NullData(u16),
    HugeLen,
    PastEnd,
    UnknownKind(u32),
}

#[derive(Arbitrary, Clone, Copy, Debug)]
pub(crate) struct LoopOpts {
    pub(crate) options: Option<(SizeSel, u8, bool, u16, PlaceSel)>,
}

/// The config `cfg` asks for (None: a NULL config) and whether it is
/// refused: (an invalid argument, a pool that cannot be built).
pub(crate) fn pool_config(cfg: &PoolCfg) -> (Option<Padded<TerroirPoolConfig>>, (bool, bool)) {
    if cfg.null_config {
        return (None, (false, false));
    }
    let (threads, too_many) = match cfg.threads {
        ThreadsSel::Default => (0, false),
        ThreadsSel::One => (1, false),
        ThreadsSel::Two => (2, false),
        ThreadsSel::JustTooMany => (terroir::max_num_threads() + 1, true),
        ThreadsSel::Absurd(n) => ((n as usize).max(terroir::max_num_threads() + 1), true),
    };
    let c = TerroirPoolConfig {
        size: 0,
        num_threads: threads,
        policy: u32::from(cfg.policy % 6),
        // Pinning changes the affinity of nothing here but the workers;
        // values past 5 (TERROIR_PIN_NODE) are refused.
        pin: u32::from(cfg.pin % 7),
    };
    let min = std::mem::offset_of!(TerroirPoolConfig, pin) + 4;
    let bad_fields = c.policy > 4 || c.pin > 5;
    let (padded, bad_size) = Padded::new(c, |c, s| c.size = s, min, cfg.size);
    // Too many workers is a build error (POOL_BUILD) or, with another bad
    // field, an invalid argument found first.
    (
        Some(padded),
        (bad_size || bad_fields, too_many && !bad_size && !bad_fields),
    )
}
