//! Parallel iterators over the nodes of a tree given by a root and a
//! function from a node to its children: [`walk_tree_prefix`] (every node
//! before its children), [`walk_tree_postfix`] (after them) and
//! [`walk_tree`] (some order).
//!
//! A run walks its part of the tree depth first with an explicit stack
//! (a chain a million nodes deep is fine; a postfix batch recurses, as a
//! sequential walk would, but no deeper than a few tens of KiB of stack)
//! and, when another worker asks for work, cuts off the oldest subtree it
//! has not entered yet, about half of what is left: it comes after
//! everything the run keeps, in either order, so results stay in order.

use std::fmt;
use std::mem;

use super::engine::{run_frontier, Consumer, Folder, Frontier};
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
    fn drive_engine<C: Consumer<S>>(self, consumer: C) -> C::Result {
        let frontier = Prefix {
            stack: vec![self.root],
            levels: vec![0],
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
    fn drive_engine<C: Consumer<S>>(self, consumer: C) -> C::Result {
        self.0.drive_engine(consumer)
    }
}

impl<S, B, I> ParallelIterator for WalkTreePostfix<S, B>
where
    S: Send,
    B: Fn(&S) -> I + Send + Sync,
    I: IntoIterator<Item = S>,
{
    type Item = S;
    fn drive_engine<C: Consumer<S>>(self, consumer: C) -> C::Result {
        let frontier = Postfix {
            stack: vec![Step::Enter(self.root)],
            children_of: &self.children_of,
        };
        run_frontier(frontier, consumer, false)
    }
}

/// A prefix walk's frontier: the subtrees not entered yet, the next one
/// last (so the later ones, at the bottom, are cut off).
struct Prefix<'b, S, B> {
    stack: Vec<S>,
    /// Where each level's siblings start on the stack (the oldest level
    /// first, at 0): a cut gives away half of the oldest level.
    levels: Vec<usize>,
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
        let at = self.stack.len();
        if self.levels.last() == Some(&at) {
            self.levels.pop();
        }
        self.stack
            .extend((self.children_of)(&node).into_iter().rev());
        if self.stack.len() > at {
            self.levels.push(at);
        }
        Some(node)
    }
    fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }
    fn split_off(&mut self) -> Option<Self> {
        let len = self.stack.len();
        if len < 2 {
            return None;
        }
        // Half of the oldest level's siblings (its later ones, at the
        // bottom), at least one: in the middle of a walk the subtrees
        // shrink towards the top (by half per level in a binary tree), so
        // the oldest level holds most of what is left. Half the stack would
        // give away nearly all of it, and the thief would be asked back at
        // once; one subtree of a wide level would be too little.
        let oldest = self.levels.get(1).copied().unwrap_or(len);
        let cut = oldest.div_ceil(2).clamp(1, len - 1);
        let keep = self.stack.split_off(cut);
        let mut levels = vec![0];
        levels.extend(self.levels.iter().filter(|&&l| l > cut).map(|l| l - cut));
        self.levels = levels;
        Some(Prefix {
            stack: mem::replace(&mut self.stack, keep),
            levels: vec![0],
            children_of: self.children_of,
        })
    }
}

/// A step of a postfix walk: a subtree to walk, or a node whose
/// children are all walked.
enum Step<S> {
    Enter(S),
    Leave(S),
}

/// A postfix walk's frontier: the steps left, the next one last. Any cut
/// of it is a valid split: the steps below the cut (the oldest, largest
/// subtrees and the nodes above them) come after every step above it.
struct Postfix<'b, S, B> {
    stack: Vec<Step<S>>,
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
            match self.stack.pop()? {
                Step::Leave(node) => return Some(node),
                Step::Enter(node) => {
                    let children = (self.children_of)(&node);
                    self.stack.push(Step::Leave(node));
                    let at = self.stack.len();
                    self.stack.extend(children.into_iter().map(Step::Enter));
                    self.stack[at..].reverse();
                }
            }
        }
    }
    fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }
    fn consume_batch<F: Folder<S>>(&mut self, folder: F, pos: usize, n: usize) -> F {
        folder.consume(
            pos,
            PostfixBatch {
                walk: self,
                left: n,
            },
        )
    }
    fn split_off(&mut self) -> Option<Self> {
        if self.stack.len() < 2 {
            return None;
        }
        // Half of the oldest level's siblings not entered (the later ones,
        // at the bottom, at least one), with the nodes below them (they
        // come after them), as for the prefix walk. A level's siblings lie
        // between their parent's step and the next node's. A stack of nodes
        // only (a chain's) gives half of them.
        let len = self.stack.len();
        let first = self.stack[..len - 1]
            .iter()
            .position(|s| matches!(s, Step::Enter(_)));
        let cut = match first {
            Some(i) => {
                let siblings = self.stack[i..]
                    .iter()
                    .take_while(|s| matches!(s, Step::Enter(_)))
                    .count();
                (i + siblings.div_ceil(2)).min(len - 1)
            }
            None => len / 2,
        };
        let keep = self.stack.split_off(cut);
        Some(Postfix {
            stack: mem::replace(&mut self.stack, keep),
            children_of: self.children_of,
        })
    }
}

/// The next `left` items of a postfix walk. Folded (how folders take their
/// items), it walks subtrees by recursion, as a sequential walk would,
/// with no step on the heap; when the batch ends inside a subtree, or the
/// recursion reaches [`REC_BYTES`], the unwinding recursion leaves what is
/// left of each level on the walk's stack.
struct PostfixBatch<'w, 'b, S, B> {
    walk: &'w mut Postfix<'b, S, B>,
    left: usize,
}

/// About how much of the thread's stack (bytes) a batch's recursion uses
/// at most.
const REC_BYTES: usize = 32 << 10;

impl<S, B, I> Iterator for PostfixBatch<'_, '_, S, B>
where
    S: Send,
    B: Fn(&S) -> I + Sync,
    I: IntoIterator<Item = S>,
{
    type Item = S;
    fn next(&mut self) -> Option<S> {
        if self.left == 0 {
            return None;
        }
        let node = self.walk.next()?;
        self.left -= 1;
        Some(node)
    }

    fn fold<A, G: FnMut(A, S) -> A>(self, init: A, mut g: G) -> A {
        let PostfixBatch { walk, mut left } = self;
        // A level's frame holds its node, its children's iterator and a few
        // copies of the accumulator (argument, result, the fold's
        // temporaries): a large accumulator allows little or no recursion.
        let frame =
            mem::size_of::<S>() + mem::size_of::<I::IntoIter>() + 4 * mem::size_of::<A>() + 128;
        let max_depth = (REC_BYTES / frame).max(1);
        let mut acc = init;
        while left > 0 {
            match walk.stack.pop() {
                None => break,
                Some(Step::Leave(node)) => {
                    left -= 1;
                    acc = g(acc, node);
                }
                Some(Step::Enter(node)) => {
                    let base = walk.stack.len();
                    let mut rec = Rec {
                        children_of: walk.children_of,
                        stack: &mut walk.stack,
                        left: &mut left,
                        g: &mut g,
                        max_depth,
                    };
                    acc = rec.walk(node, acc, 0).0;
                    // The levels left what remains innermost first, each
                    // in walk order: reversed, the outermost is at the
                    // bottom and the next step on top.
                    walk.stack[base..].reverse();
                }
            }
        }
        acc
    }
}

/// A batch's recursion (see [`PostfixBatch`]).
struct Rec<'r, S, B, G> {
    children_of: &'r B,
    stack: &'r mut Vec<Step<S>>,
    left: &'r mut usize,
    g: &'r mut G,
    max_depth: usize,
}

impl<S, B, I, G> Rec<'_, S, B, G>
where
    B: Fn(&S) -> I,
    I: IntoIterator<Item = S>,
{
    /// Walks `node`'s subtree into `acc`; `false` (not finished) when the
    /// batch ended or the depth ran out, with what is left of this level
    /// pushed in walk order: its children not walked, then the node.
    fn walk<A>(&mut self, node: S, mut acc: A, depth: usize) -> (A, bool)
    where
        G: FnMut(A, S) -> A,
    {
        let mut children = (self.children_of)(&node).into_iter();
        while let Some(child) = children.next() {
            if *self.left == 0 || depth + 1 >= self.max_depth {
                self.stack.push(Step::Enter(child));
                self.leave(children, node);
                return (acc, false);
            }
            let (a, done) = self.walk(child, acc, depth + 1);
            acc = a;
            if !done {
                self.leave(children, node);
                return (acc, false);
            }
        }
        if *self.left == 0 {
            self.stack.push(Step::Leave(node));
            return (acc, false);
        }
        *self.left -= 1;
        ((self.g)(acc, node), true)
    }

    /// Pushes a level's children not walked, then its node.
    fn leave(&mut self, children: I::IntoIter, node: S) {
        self.stack.extend(children.map(Step::Enter));
        self.stack.push(Step::Leave(node));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Node `n`'s children in a tree of `len` nodes of the given shape
    /// (0: binary heap order, 1: a chain, 2: a wide root of chains of 3).
    fn kids(len: usize, shape: u8) -> impl Fn(&usize) -> Vec<usize> + Sync {
        move |&n| match shape {
            0 => [2 * n + 1, 2 * n + 2]
                .into_iter()
                .filter(|&c| c < len)
                .collect(),
            1 => (n + 1 < len).then_some(n + 1).into_iter().collect(),
            _ if n == 0 => (1..len).step_by(3).collect(),
            _ => (n % 3 != 0 && n + 1 < len)
                .then_some(n + 1)
                .into_iter()
                .collect(),
        }
    }

    fn postfix_seq(n: usize, kids: &impl Fn(&usize) -> Vec<usize>, out: &mut Vec<usize>) {
        for c in kids(&n) {
            postfix_seq(c, kids, out);
        }
        out.push(n);
    }

    /// Folding batches of every size, the batch ending anywhere inside
    /// the recursion, and cutting parts off between batches, gives the
    /// sequential walk.
    #[test]
    fn postfix_batches_fold_in_walk_order() {
        for shape in 0..3u8 {
            for len in [1, 2, 3, 7, 30, 100] {
                let children_of = kids(len, shape);
                let mut want = Vec::new();
                postfix_seq(0, &children_of, &mut want);
                for n in 1..=len + 1 {
                    for cut in [false, true] {
                        let mut parts = vec![Postfix {
                            stack: vec![Step::Enter(0)],
                            children_of: &children_of,
                        }];
                        let mut got = Vec::new();
                        // Parts cut off come after the part they left:
                        // walk the newest part (last) first.
                        while let Some(mut walk) = parts.pop() {
                            let mut later = Vec::new();
                            while !walk.is_empty() {
                                let batch = PostfixBatch {
                                    walk: &mut walk,
                                    left: n,
                                };
                                let before = got.len();
                                got = batch.fold(got, |mut v, x| {
                                    v.push(x);
                                    v
                                });
                                assert!(got.len() - before <= n);
                                if cut {
                                    if let Some(theirs) = walk.split_off() {
                                        assert!(!theirs.is_empty() && !walk.is_empty());
                                        later.push(theirs);
                                    }
                                }
                            }
                            // The oldest cut holds the latest items.
                            parts.extend(later);
                        }
                        assert_eq!(got, want, "shape {shape} len {len} batch {n} cut {cut}");
                    }
                }
            }
        }
    }

    /// A cut gives away half of the oldest level: half of a wide root's
    /// children, one of a binary node's two; the parts together still walk
    /// in order (checked with cuts after every item).
    #[test]
    fn cuts_give_half_of_the_oldest_level() {
        let star = |&n: &usize| {
            if n == 0 {
                (1..=1000).collect()
            } else {
                Vec::new()
            }
        };
        let mut pre = Prefix {
            stack: vec![0],
            levels: vec![0],
            children_of: &star,
        };
        assert_eq!(pre.next(), Some(0));
        let theirs = pre.split_off().expect("a cut");
        assert_eq!((theirs.stack.len(), pre.stack.len()), (500, 500));
        let mut post = Postfix {
            stack: vec![Step::Enter(0)],
            children_of: &star,
        };
        assert_eq!(post.next(), Some(1));
        let theirs = post.split_off().expect("a cut");
        // The root's step and 500 of its 999 children left.
        assert_eq!((theirs.stack.len(), post.stack.len()), (501, 499));

        for shape in 0..3u8 {
            for len in [1, 2, 3, 7, 30, 100] {
                let children_of = kids(len, shape);
                let mut want = Vec::new();
                prefix_seq(0, &children_of, &mut want);
                let mut parts = vec![Prefix {
                    stack: vec![0],
                    levels: vec![0],
                    children_of: &children_of,
                }];
                let mut got = Vec::new();
                while let Some(mut walk) = parts.pop() {
                    let mut later = Vec::new();
                    while let Some(x) = walk.next() {
                        got.push(x);
                        if let Some(theirs) = walk.split_off() {
                            assert!(!theirs.is_empty() && !walk.is_empty());
                            later.push(theirs);
                        }
                    }
                    parts.extend(later);
                }
                assert_eq!(got, want, "prefix shape {shape} len {len}");
            }
        }
    }

    fn prefix_seq(n: usize, kids: &impl Fn(&usize) -> Vec<usize>, out: &mut Vec<usize>) {
        out.push(n);
        for c in kids(&n) {
            prefix_seq(c, kids, out);
        }
    }

    /// Folds the postfix walk of a chain of `len` nodes (`0 → 1 → …`) in
    /// one batch, on a thread with a 256 KiB stack; also checks that the
    /// batch took the whole walk.
    fn fold_chain_on_a_small_stack<A: Send + 'static>(
        len: usize,
        init: A,
        f: impl FnMut(A, usize) -> A + Send + 'static,
    ) -> A {
        std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || {
                let children_of = |&n: &usize| (n + 1 < len).then_some(n + 1);
                let mut walk = Postfix {
                    stack: vec![Step::Enter(0)],
                    children_of: &children_of,
                };
                let batch = PostfixBatch {
                    walk: &mut walk,
                    left: usize::MAX,
                };
                let acc = batch.fold(init, f);
                assert!(walk.is_empty());
                acc
            })
            .expect("a thread")
            .join()
            .expect("no panic")
    }

    /// A large fold accumulator shrinks the recursion: folding a 4 KiB
    /// array through a 100 000-node chain on a 256 KiB stack (with the
    /// depth bound counting only the node and the iterator, it overflows).
    #[test]
    fn postfix_fold_with_a_large_accumulator() {
        let counts = fold_chain_on_a_small_stack(100_000, [0u64; 512], |mut a, x| {
            a[x % 512] += 1;
            a
        });
        assert_eq!(counts.iter().sum::<u64>(), 100_000);
    }

    /// The recursion stops at its depth limit and the walk goes on from
    /// the stack: a chain of 200 000 nodes folds in one batch on a thread
    /// with a 256 KiB stack (without the limit it overflows the stack).
    #[test]
    fn postfix_fold_beyond_the_depth_limit() {
        let got = fold_chain_on_a_small_stack(200_000, Vec::new(), |mut v, x| {
            v.push(x);
            v
        });
        assert!(got.into_iter().eq((0..200_000).rev()));
    }
}
