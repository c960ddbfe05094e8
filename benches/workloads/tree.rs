//! A pointer-based binary tree summed with a `join` on every node (the
//! tree of chili's benchmark, used by `benches/overhead.rs` and
//! `examples/tour.rs`): join overhead plus pointer chasing, which on a
//! large tree is memory far larger than the caches.
//!
//! The values are `0, 1, 2, ...` in preorder, so the sum is
//! `n (n - 1) / 2` whatever the layout. The layout is the order in which
//! nodes are allocated, and it decides a large tree's numbers more than
//! any scheduler: allocated parent first ([`Layout::ParentFirst`]), a
//! left-first walk visits ascending addresses and the prefetcher helps;
//! allocated children first ([`Layout::ChildrenFirst`], as a tree built
//! bottom-up is), the same walk took every runner 2.5-3x longer. Real
//! trees come in both.

use super::fib::Joiner;

/// A boxed binary-tree node.
pub struct Node {
    /// This node's value.
    pub value: u64,
    /// Left subtree.
    pub left: Option<Box<Node>>,
    /// Right subtree.
    pub right: Option<Box<Node>>,
}

/// The order in which a tree's nodes are allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// A node before its children (preorder): a left-first walk visits
    /// ascending addresses.
    ParentFirst,
    /// Both children before their parent (postorder), as when a tree is
    /// built bottom-up.
    ChildrenFirst,
}

impl Layout {
    /// Both layouts.
    pub const ALL: [Layout; 2] = [Layout::ParentFirst, Layout::ChildrenFirst];

    /// `"parent-first"` or `"children-first"`.
    pub fn name(self) -> &'static str {
        match self {
            Layout::ParentFirst => "parent-first",
            Layout::ChildrenFirst => "children-first",
        }
    }
}

/// A complete tree of `depth` levels (`2^depth - 1` nodes) whose values are
/// `0, 1, 2, ...` in preorder, allocated in `layout` order.
pub fn build_tree(depth: u32, layout: Layout) -> Box<Node> {
    fn build(depth: u32, next: &mut u64, layout: Layout) -> Box<Node> {
        let value = *next;
        *next += 1;
        match layout {
            Layout::ParentFirst => {
                let mut node = Box::new(Node {
                    value,
                    left: None,
                    right: None,
                });
                if depth > 1 {
                    node.left = Some(build(depth - 1, next, layout));
                    node.right = Some(build(depth - 1, next, layout));
                }
                node
            }
            Layout::ChildrenFirst => {
                let (left, right) = if depth > 1 {
                    let left = build(depth - 1, next, layout);
                    (Some(left), Some(build(depth - 1, next, layout)))
                } else {
                    (None, None)
                };
                Box::new(Node { value, left, right })
            }
        }
    }
    assert!(depth >= 1, "a tree has at least one level");
    build(depth, &mut 0, layout)
}

/// Nodes of a tree of `depth` levels.
pub fn nodes(depth: u32) -> u64 {
    (1u64 << depth) - 1
}

/// The sum of the values of the tree, with a join on every node.
pub fn tree_sum<J: Joiner>(node: &Node) -> u64 {
    let (l, r) = J::join(
        || node.left.as_deref().map_or(0, tree_sum::<J>),
        || node.right.as_deref().map_or(0, tree_sum::<J>),
    );
    node.value + l + r
}

/// [`tree_sum`] with chili's `join`. chili runs its *second* closure first
/// when it does not share work, so the right subtree is passed first: the
/// walk is left first, as with the other runners.
pub fn tree_sum_chili(node: &Node, s: &mut chili::Scope<'_>) -> u64 {
    let (r, l) = s.join(
        |s| node.right.as_deref().map_or(0, |n| tree_sum_chili(n, s)),
        |s| node.left.as_deref().map_or(0, |n| tree_sum_chili(n, s)),
    );
    node.value + l + r
}

#[cfg(test)]
mod tests {
    // The bench targets (harness = false) compile this module without its
    // #[test] functions, which leaves the imports unused there.
    #[allow(unused_imports)]
    use super::super::fib::Seq;
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn both_layouts_hold_the_same_values() {
        for layout in Layout::ALL {
            let n = nodes(10);
            assert_eq!(tree_sum::<Seq>(&build_tree(10, layout)), n * (n - 1) / 2);
        }
    }
}
