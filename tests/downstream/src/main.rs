//! A user's crate: terroir with its default features.

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = terroir::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn main() {
    let pool = terroir::ThreadPoolBuilder::new()
        .num_threads(2)
        .pin(false)
        .build()
        .expect("a pool");
    assert_eq!(pool.install(|| fib(20)), 6765);
    println!("terroir-downstream ok");
}
