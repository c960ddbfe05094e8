//! A user's crate: terroir with its default features.
//!
//! Adding terroir as a dependency must not change how the user's own code
//! type-checks: a dependency that adds trait impls on standard types does
//! (serde_json's `PartialEq<Value>` for the integers makes `r2` below
//! ambiguous: "type annotations needed"). This crate fails to compile
//! when such a dependency is in terroir's default build.

/// rayon's own test, which stopped compiling with terroir 0.1's default
/// features (serde_json in the graph).
fn inference_is_unchanged() {
    let a = [1u32, 2, 3];
    let r1: u32 = a.iter().map(|&i| i + 1).sum();
    let r2 = a.iter().map(|&i| i + 1).sum();
    assert_eq!(r1, r2);
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = terroir::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn main() {
    inference_is_unchanged();
    let pool = terroir::ThreadPoolBuilder::new()
        .num_threads(2)
        .pin(false)
        .build()
        .expect("a pool");
    assert_eq!(pool.install(|| fib(20)), 6765);
    println!("terroir-downstream ok");
}
