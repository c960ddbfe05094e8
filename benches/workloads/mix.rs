//! One splitmix64 step (Steele, Lea and Flood 2014): a cheap, well-mixed,
//! deterministic hash of a `u64`, the pseudo-random source of the
//! workloads (uts' node states, health's patients) and of the examples
//! and benches that need made-up but reproducible data. One copy, so that
//! every user computes the same values.

/// The splitmix64 successor of `z`: add the golden-ratio increment, then
/// the three xor-shift-multiply rounds of its finaliser.
#[inline(always)]
pub fn mix(z: u64) -> u64 {
    let mut z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
