//! Parallel iterators over the nodes of a tree given by a root and a
//! function from a node to its children: [`walk_tree_prefix`] (every node
//! before its children), [`walk_tree_postfix`] (after them) and
//! [`walk_tree`] (some order).
//!
//! A run walks its part of the tree depth first with an explicit stack
//! (no recursion: a chain a million nodes deep is fine) and, when another
//! worker asks for work, cuts off the later half of the subtrees it has
//! not entered yet: they come after everything the run keeps, in either
//! order, so results stay in order.

use std::fmt;
use std::mem;

use super::plumbing::{run_frontier, Consumer, Frontier};
use super::ParallelIterator;

/// The nodes of the tree under `root`, every node before its children and
/// children in the order `children_of` gives them (rayon's
/// `walk_tree_prefix`).
///
/// ```
/// use terroir::prelude::*;
/// use terroir::iter::walk_tree_prefix;
/// //      4
/// //     / \
/// //    2   3
/// //       / \
/// //      1   2
/// let nodes: Vec<u32> = walk_tree_prefix(4u32, |&e| if e <= 2 { vec![] } else { vec![e / 2, e / 2 + 1] })
///     .collect();
/// assert_eq!(nodes, [4, 2, 3, 1, 2]);
/// ```
pub fn walk_tree_prefix<S, B, I>(root: S, children_of: B) -> WalkTreePrefix<S, B>
where
    S: Send,
    B: Fn(&S) -> I + Send + Sync,
    I: IntoIterator<Item = S, IntoIter: DoubleEndedIterator>,
{
    WalkTreePrefix { root, children_of }
}

/// The nodes of the tree under `root`, every node after its children and
/// children in the order `children_of` gives them (rayon's
/// `walk_tree_postfix`).
///
/// ```
/// use terroir::prelude::*;
/// use terroir::iter::walk_tree_postfix;
/// let nodes: Vec<u32> = walk_tree_postfix(4u32, |&e| if e <= 2 { vec![] } else { vec![e / 2, e / 2 + 1] })
///     .collect();
/// assert_eq!(nodes, [2, 1, 2, 3, 4]);
/// ```
pub fn walk_tree_postfix<S, B, I>(root: S, children_of: B) -> WalkTreePostfix<S, B>
where
    S: Send,
    B: Fn(&S) -> I + Send + Sync,
    I: IntoIterator<Item = S>,
{
    WalkTreePostfix { root, children_of }
}

/// The nodes of the tree under `root` in some order (rayon's
/// `walk_tree`: use it when the order does not matter; today it is
/// [`walk_tree_prefix`]'s, the cheaper walk).
///
/// ```
/// use terroir::prelude::*;
/// let sum: u32 = terroir::iter::walk_tree(4u32, |&e| if e <= 2 { vec![] } else { vec![e / 2, e / 2 + 1] })
///     .sum();
/// assert_eq!(sum, 12);
/// ```
pub fn walk_tree<S, B, I>(root: S, children_of: B) -> WalkTree<S, B>
where
    S: Send,
    B: Fn(&S) -> I + Send + Sync,
    I: IntoIterator<Item = S, IntoIter: DoubleEndedIterator>,
{
    WalkTree(walk_tree_prefix(root, children_of))
}

macro_rules! walk_struct {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
        #[derive(Clone)]
        pub struct $name<S, B> {
            root: S,
            children_of: B,
        }

        /// Shows the root (`children_of` is a closure).
        impl<S: fmt::Debug, B> fmt::Debug for $name<S, B> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("root", &self.root)
                    .finish_non_exhaustive()
            }
        }
    };
}

walk_struct! {
    /// [`walk_tree_prefix`]'s iterator.
    WalkTreePrefix
}

walk_struct! {
    /// [`walk_tree_postfix`]'s iterator.
    WalkTreePostfix
}

/// [`walk_tree`]'s iterator.
#[must_use = "iterator adaptors are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct WalkTree<S, B>(WalkTreePrefix<S, B>);

impl<S, B, I> ParallelIterator for WalkTreePrefix<S, B>
where
    S: Send,
    B: Fn(&S) -> I + Send + Sync,
    I: IntoIterator<Item = S, IntoIter: DoubleEndedIterator>,
{
    type Item = S;
    fn drive<C: Consumer<S>>(self, consumer: C) -> C::Result {
        let frontier = Prefix {
            stack: vec![self.root],
            children_of: &self.children_of,
        };
        run_frontier(frontier, consumer, false)
    }
}

impl<S, B, I> ParallelIterator for WalkTree<S, B>
where
    S: Send,
    B: Fn(&S) -> I + Send + Sync,
    I: IntoIterator<Item = S, IntoIter: DoubleEndedIterator>,
{
    type Item = S;
    fn drive<C: Consumer<S>>(self, consumer: C) -> C::Result {
        self.0.drive(consumer)
    }
}

impl<S, B, I> ParallelIterator for WalkTreePostfix<S, B>
where
    S: Send,
    B: Fn(&S) -> I + Send + Sync,
    I: IntoIterator<Item = S>,
{
    type Item = S;
    fn drive<C: Consumer<S>>(self, consumer: C) -> C::Result {
        let frontier = Postfix {
            frames: vec![Frame {
                node: None,
                pending: vec![self.root],
            }],
            entered: 0,
            children_of: &self.children_of,
        };
        run_frontier(frontier, consumer, false)
    }
}

/// A prefix walk's frontier: the subtrees not entered yet, the next one
/// last (so the later ones, at the bottom, are cut off).
struct Prefix<'b, S, B> {
    stack: Vec<S>,
    children_of: &'b B,
}

impl<S, B, I> Frontier for Prefix<'_, S, B>
where
    S: Send,
    B: Fn(&S) -> I + Sync,
    I: IntoIterator<Item = S, IntoIter: DoubleEndedIterator>,
{
    type Item = S;
    fn next(&mut self) -> Option<S> {
        let node = self.stack.pop()?;
        self.stack
            .extend((self.children_of)(&node).into_iter().rev());
        Some(node)
    }
    fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }
    fn split_off(&mut self) -> Option<Self> {
        if self.stack.len() < 2 {
            return None;
        }
        let keep = self.stack.split_off(self.stack.len() / 2);
        Some(Prefix {
            stack: mem::replace(&mut self.stack, keep),
            children_of: self.children_of,
        })
    }
}

/// A node of a postfix walk entered but not yielded: its children not
/// entered yet (the next one last). The node is `None` where it went to
/// another part with some of its children.
struct Frame<S> {
    node: Option<S>,
    pending: Vec<S>,
}

/// A postfix walk's frontier: the path of entered nodes from the oldest
/// (first) to the one being walked (last). Only the first frame may have
/// no node.
struct Postfix<'b, S, B> {
    frames: Vec<Frame<S>>,
    /// No frame before this one has children left to enter (so that
    /// looking for a part to cut off costs, over a whole walk, no more
    /// than the frames pushed: a chain a million deep is looked through
    /// once, not once per cut).
    entered: usize,
    children_of: &'b B,
}

impl<S, B, I> Frontier for Postfix<'_, S, B>
where
    S: Send,
    B: Fn(&S) -> I + Sync,
    I: IntoIterator<Item = S>,
{
    type Item = S;
    fn next(&mut self) -> Option<S> {
        loop {
            let top = self.frames.last_mut()?;
            match top.pending.pop() {
                Some(child) => {
                    let mut pending: Vec<S> = (self.children_of)(&child).into_iter().collect();
                    pending.reverse();
                    self.frames.push(Frame {
                        node: Some(child),
                        pending,
                    });
                }
                None => {
                    let node = self.frames.pop().and_then(|f| f.node);
                    self.entered = self.entered.min(self.frames.len());
                    if node.is_some() {
                        return node;
                    }
                }
            }
        }
    }
    fn is_empty(&self) -> bool {
        // Every frame but the first has a node.
        match self.frames.as_slice() {
            [] => true,
            [only] => only.node.is_none() && only.pending.is_empty(),
            _ => false,
        }
    }
    fn split_off(&mut self) -> Option<Self> {
        // The oldest frame with children not entered: the later ones go,
        // with that frame's node and the older frames' nodes (all after
        // them, and the older frames have no children left to enter).
        let from = self.entered;
        let Some(k) = self.frames[from..]
            .iter()
            .position(|f| !f.pending.is_empty())
        else {
            self.entered = self.frames.len();
            return None;
        };
        let k = from + k;
        self.entered = k;
        let n = self.frames[k].pending.len();
        let give = if k + 1 == self.frames.len() {
            // The path's end: keep some children for this part.
            if n < 2 {
                return None;
            }
            n / 2
        } else {
            n.div_ceil(2)
        };
        let newer = self.frames.split_off(k);
        let mut theirs = mem::replace(&mut self.frames, newer);
        let frame = &mut self.frames[0];
        theirs.push(Frame {
            node: frame.node.take(),
            pending: frame.pending.drain(..give).collect(),
        });
        self.entered = 0;
        Some(Postfix {
            frames: theirs,
            entered: 0,
            children_of: self.children_of,
        })
    }
}
