//! uts: Unbalanced Tree Search, counting the nodes of a random tree that is
//! generated on the fly, after BOTS (`uts`, Duran et al. 2009, from Olivier
//! et al.'s UTS benchmark).
//!
//! The tree is UTS' binomial kind, with the parameters of its T3 tree: the
//! root has `b0` children; every other node has [`M`] = 8 children with
//! probability [`Q`] = 0.124875, none otherwise (`q m = 0.999`, just below
//! 1: each root child's subtree has 1,000 nodes on average, with enormous
//! variance, so the tree is deep, narrow and extremely unbalanced). Each
//! node carries a 64-bit state; a child's state is a hash of its parent's
//! state and its index, and a node's child count follows from its state, so
//! the tree (and its node count) is the same in every run and every
//! version. UTS and BOTS derive states with SHA-1; this workload uses
//! [`HASH_ROUNDS`] = 32 rounds of the splitmix64 mixer instead (no crypto
//! dependency, and deterministic all the same): about 0.1 microsecond per
//! node on the reference 2-core machine, a few times less than a SHA-1
//! evaluation, so tasks are finer than in BOTS. (With fewer rounds the
//! workload becomes a pure join-overhead test like fib.)
//!
//! Parallelism: a task per child, as in BOTS (which spawns a task per
//! child and waits for them): the children of a node are split in halves
//! with `join` down to single children. There is no cutoff; a node does
//! too little work for a label to be worth it, so there are none.
//!
//! Size parameter: `b0`, the root's child count. Presets: Small 200
//! (2,937 nodes, depth 26), Default 2,000 (T3's value; 953,401 nodes, depth
//! 723, about 0.1 s sequentially on the reference 2-core machine), Large
//! 20,000 (10,488,129 nodes, depth 1,443). `describe` gives the node count
//! and depth (computed once at construction). The recursion is as deep as
//! the tree (a few stack frames per level): a `Param` size with a much
//! deeper tree may need larger worker stacks.
//!
//! Kind of program: task overhead and load balance on an extremely
//! imbalanced, deep tree: no memory traffic, tiny tasks, and work that
//! only stealing can spread.

use super::fib::{Joiner, Rayon, Seq, Terroir};
use super::mix::mix;
use super::{checksum, Size, Workload};
use terroir::numa::Topology;
use terroir::ThreadPool;

/// A non-root node's child count when it has children (T3: 8).
pub const M: u64 = 8;

/// The probability that a non-root node has [`M`] children (T3:
/// 0.124875).
pub const Q: f64 = 0.124875;

/// Rounds of the splitmix64 mixer per child state (standing in for UTS'
/// SHA-1 evaluation).
pub const HASH_ROUNDS: u32 = 32;

/// The root's state seed (UTS' `-r`; T3 uses 42).
pub const SEED: u64 = 42;

/// [`Q`] as a threshold on a state's top 53 bits.
const Q_THRESHOLD: u64 = (Q * (1u64 << 53) as f64) as u64;

/// The state of child `i` of the node with state `parent`.
#[inline]
fn child_state(parent: u64, i: u64) -> u64 {
    let mut z = parent ^ mix(i);
    for _ in 0..HASH_ROUNDS {
        z = mix(z);
    }
    z
}

/// The child count of the non-root node with state `state`: [`M`] with
/// probability [`Q`], else 0.
#[inline]
fn num_children(state: u64) -> u64 {
    if (state >> 11) < Q_THRESHOLD {
        M
    } else {
        0
    }
}

/// The size of the subtree of the non-root node with state `state`.
fn subtree<J: Joiner>(state: u64) -> u64 {
    1 + children::<J>(state, 0, num_children(state))
}

/// The total size of the subtrees of children `lo..hi` of the node with
/// state `parent`: a task per child, split in halves with joins.
fn children<J: Joiner>(parent: u64, lo: u64, hi: u64) -> u64 {
    match hi - lo {
        0 => 0,
        1 => subtree::<J>(child_state(parent, lo)),
        len => {
            let mid = lo + len / 2;
            let (a, b) = J::join(
                || children::<J>(parent, lo, mid),
                || children::<J>(parent, mid, hi),
            );
            a + b
        }
    }
}

/// The node count of the tree whose root has `b0` children.
fn tree<J: Joiner>(b0: u64) -> u64 {
    1 + children::<J>(mix(SEED), 0, b0)
}

/// The node count and depth (in edges) of the tree whose root has `b0`
/// children, by a sequential traversal with an explicit stack (no
/// recursion, so any depth fits on any thread); for `describe` only.
fn stats(b0: u64) -> (u64, u64) {
    let root = mix(SEED);
    let mut nodes = 1;
    let mut deepest = 0;
    let mut stack: Vec<(u64, u64)> = (0..b0).map(|i| (child_state(root, i), 1)).collect();
    while let Some((state, depth)) = stack.pop() {
        nodes += 1;
        deepest = deepest.max(depth);
        for i in 0..num_children(state) {
            stack.push((child_state(state, i), depth + 1));
        }
    }
    (nodes, deepest)
}

/// The uts workload: counts the nodes of a T3-like binomial tree.
struct Uts {
    /// The root's child count.
    b0: u64,
    /// The tree's node count (computed at construction, for `describe`).
    nodes: u64,
    /// The tree's depth (computed at construction, for `describe`).
    depth: u64,
}

impl Workload for Uts {
    fn name(&self) -> &'static str {
        "uts"
    }

    fn describe(&self) -> String {
        format!(
            "binomial b0={}, q={Q}, m={M}: {} nodes, depth {}",
            self.b0, self.nodes, self.depth
        )
    }

    fn sequential(&self) -> u64 {
        checksum([tree::<Seq>(self.b0)])
    }

    fn terroir(&self, pool: &ThreadPool) -> u64 {
        checksum([pool.install(|| tree::<Terroir>(self.b0))])
    }

    fn rayon(&self, pool: &rayon::ThreadPool) -> Option<u64> {
        Some(checksum([pool.install(|| tree::<Rayon>(self.b0))]))
    }
}

/// Builds uts for `size` (`b0`: 200 / 2,000 / 20,000).
pub fn new(size: Size, topology: &Topology) -> Result<Box<dyn Workload>, String> {
    let _ = topology;
    let b0 = size.pick(200, 2_000, 20_000) as u64;
    let (nodes, depth) = stats(b0);
    Ok(Box::new(Uts { b0, nodes, depth }))
}
