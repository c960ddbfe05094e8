//! A report of a million tasks: the SVG stays under 2 MB, and the JSON and
//! the Chrome trace are streamed (the heap grows by far less than the files
//! while they are written). Its own test binary: it counts the heap with a
//! global allocator of its own.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use terroir::label;
use terroir::report::{InflationReport, RecordOptions};
use terroir::ThreadPoolBuilder;

/// The system allocator, counting the bytes in use and the peak.
struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to `System` with its own arguments; the
// counters are only statistics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded (the caller's promise about `layout`).
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = NOW.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        NOW.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded: `ptr` was allocated by `alloc` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Heap bytes in use now; resets the peak to it.
#[cfg_attr(not(feature = "report"), allow(dead_code))]
fn reset_peak() -> usize {
    let now = NOW.load(Ordering::Relaxed);
    PEAK.store(now, Ordering::Relaxed);
    now
}

/// A join tree of `n` labelled leaves.
fn leaves(n: u64) -> u64 {
    if n == 1 {
        return label("leaf", || std::hint::black_box(1));
    }
    let (a, b) = terroir::join(|| leaves(n / 2), || leaves(n - n / 2));
    a + b
}

#[test]
fn a_million_tasks_make_a_small_picture_and_streamed_files() {
    const N: u64 = 1 << 20;
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let ts = RecordOptions::timestamps_only();
    let (sum, rec) = pool.record_with(&ts, || leaves(N));
    assert_eq!(sum, N);
    let labelled = rec
        .tasks
        .iter()
        .filter(|t| t.label.as_str() == "leaf")
        .count();
    assert_eq!(labelled as u64, N);
    let report = InflationReport::parallel_only(&rec);
    drop(rec);
    let svg = report.to_svg();
    eprintln!(
        "{} tasks: SVG {} bytes",
        report.parallel_run.tasks.len(),
        svg.len()
    );
    assert!(
        svg.len() < 2 << 20,
        "the SVG of a million tasks is {} bytes",
        svg.len()
    );
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("aggregated into time buckets"));
    // Each worker was busy nearly all the window, and the picture says so:
    // its buckets cover the row, none more than 100 % busy.
    let busy: Vec<f64> = svg
        .split("busy ")
        .skip(1)
        .filter_map(|s| s.split(" %").next()?.parse().ok())
        .collect();
    assert!(!busy.is_empty());
    assert!(busy.iter().all(|&b| b <= 100.5), "{busy:?}");
    let covered: f64 = svg
        .split("<rect ")
        .filter(|r| r.contains("busy "))
        .filter_map(|r| {
            r.split("width=\"")
                .nth(1)?
                .split('"')
                .next()?
                .parse::<f64>()
                .ok()
        })
        .sum();
    // Most of both rows (not all: on a loaded machine a worker waits for
    // its first steal, or is preempted between tasks, for a few percent of
    // the window).
    assert!(
        covered > 0.75 * 2.0 * 800.0,
        "the workers' rows are {covered} px wide in all"
    );
    drop(svg);
    let dir = std::env::temp_dir().join(format!("terroir-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    #[cfg(feature = "report")]
    for (name, write) in [
        (
            "trace.json",
            &(|w: std::fs::File| report.write_chrome_trace(w))
                as &dyn Fn(std::fs::File) -> std::io::Result<()>,
        ),
        ("report.json", &|w: std::fs::File| report.write_json(w)),
    ] {
        let path = dir.join(name);
        let before = reset_peak();
        write(std::fs::File::create(&path).unwrap()).unwrap();
        let grew = PEAK.load(Ordering::Relaxed) - before;
        let size = std::fs::metadata(&path).unwrap().len();
        eprintln!("{name}: {size} bytes written, heap peak {grew} bytes above the report's");
        assert!(
            size > 50 << 20,
            "{name} of a million tasks is only {size} bytes"
        );
        assert!(
            grew < 4 << 20,
            "writing {name} ({size} bytes) grew the heap by {grew} bytes: not streamed"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
