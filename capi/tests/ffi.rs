//! The C API from C: compiles the C examples (`examples/c/` at the root
//! of the repository, the report example among them), the C error tests
//! (`examples/c/errors.c`) and the C tests (`tests/c/`) with the system C
//! compiler against this crate's `include/terroir.h` and its own
//! `libterroir.so` / `libterroir.a`, runs them with small inputs, and runs
//! them again under Valgrind (`--error-exitcode=1 --leak-check=full`) when
//! it is installed.
//!
//! Which library: this crate's `[lib]` (named `terroir`) is a cdylib and
//! a staticlib, which `cargo test` does not build; its sources are also
//! the example target `terroir` (`examples/terroir.rs`), which `cargo test`
//! builds before the tests, with the same profile and features. Both
//! artifacts land in `target/<profile>/examples/`, beside the `deps/`
//! directory of this test executable, so the test links exactly what it
//! tests without a nested `cargo build` (which would wait forever on the
//! build-directory lock that `cargo test` holds, or rebuild everything in
//! another target directory).
//!
//! Needs a C compiler (`$CC`, else `cc`); Valgrind and OpenMP are used when
//! present and reported as skipped otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The root of the repository (the C examples and tests live there).
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("capi/ is a folder of the repository")
}

/// This crate's folder (its header is `include/terroir.h` there).
fn capi() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The directory with this build's `libterroir.so` and `libterroir.a`.
fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test executable's path");
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>/deps/")
            .join("examples");
        for lib in ["libterroir.so", "libterroir.a"] {
            assert!(
                dir.join(lib).exists(),
                "{} is missing: the example target `terroir` in capi/Cargo.toml builds it \
                 (crate-type cdylib and staticlib)",
                dir.join(lib).display()
            );
        }
        dir
    })
}

/// Where compiled C programs go.
fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ffi");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_owned())
}

/// Runs `cmd` to completion (killing it after `limit`) and returns its
/// output; panics with the command and its output when it fails.
fn run(cmd: &mut Command, limit: Duration) -> Output {
    let what = format!("{cmd:?}");
    // cargo's LD_LIBRARY_PATH names target/<profile>/ before deps/, and a
    // libterroir.so left there by an earlier `cargo build` would win over
    // the rpath (DT_RUNPATH comes after LD_LIBRARY_PATH): load this
    // build's library.
    let mut child = cmd
        .env("LD_LIBRARY_PATH", lib_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let start = Instant::now();
    // Drain the pipes on threads so that a chatty child cannot block.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).ok();
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).ok();
        v
    });
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            panic!("{what} did not finish within {limit:?} (deadlock?)");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let output = Output {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    };
    assert!(
        output.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Compiles C sources into an executable linked with `libterroir.so`
/// (rpath set), with `extra` flags.
fn compile(name: &str, sources: &[&str], extra: &[&str]) -> PathBuf {
    let exe = out_dir().join(name);
    let mut cmd = Command::new(cc());
    cmd.args(["-std=c11", "-O1", "-g", "-Wall", "-Wextra"])
        .arg("-I")
        .arg(capi().join("include"));
    for s in sources {
        cmd.arg(root().join(s));
    }
    cmd.args(extra).arg("-o").arg(&exe);
    run(&mut cmd, Duration::from_secs(120));
    exe
}

fn compile_shared(name: &str, sources: &[&str]) -> PathBuf {
    let dir = lib_dir().display().to_string();
    compile(
        name,
        sources,
        &[
            "-L",
            &dir,
            "-lterroir",
            "-lpthread",
            &format!("-Wl,-rpath,{dir}"),
        ],
    )
}

/// The system libraries a Rust staticlib needs (what `rustc --print
/// native-static-libs` prints for this target), after hwloc's when the
/// crate is built with the `hwloc` feature (a staticlib carries no native
/// dependencies: `pkg-config --static --libs hwloc` names them).
const NATIVE_STATIC_LIBS: &[&str] = if cfg!(feature = "hwloc") {
    &[
        "-lhwloc",
        "-ludev",
        "-lgcc_s",
        "-lutil",
        "-lrt",
        "-lpthread",
        "-lm",
        "-ldl",
    ]
} else {
    &["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"]
};

fn valgrind() -> Option<&'static str> {
    static V: OnceLock<bool> = OnceLock::new();
    let present = *V.get_or_init(|| {
        Command::new("valgrind")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if present {
        Some("valgrind")
    } else {
        eprintln!("valgrind is not installed: the Valgrind runs are skipped");
        None
    }
}

/// Runs `exe args` under Valgrind's memcheck (errors and leaks fail),
/// when Valgrind is installed.
fn under_valgrind(exe: &Path, args: &[&str]) -> Option<String> {
    let v = valgrind()?;
    let supp = capi().join("tests/c/valgrind.supp");
    let o = run(
        Command::new(v)
            .args(["--error-exitcode=1", "--leak-check=full", "-q"])
            .arg(format!("--suppressions={}", supp.display()))
            .arg(exe)
            .args(args)
            // Two workers whatever the machine: Valgrind serialises threads.
            .env("TERROIR_NUM_THREADS", "2"),
        Duration::from_secs(600),
    );
    Some(stdout(&o))
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {key}= in {line:?}"))
}

fn check_example_line(out: &str, name: &str) {
    let line = out
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_else(|| {
            panic!("no line starting with {name} in {out:?}");
        });
    assert_eq!(field(line, "check"), "ok", "{line}");
    assert_eq!(field(line, "result"), field(line, "expected"), "{line}");
}

#[test]
fn error_cases_have_defined_results() {
    let exe = compile_shared("errors", &["examples/c/errors.c"]);
    let out = stdout(&run(&mut Command::new(&exe), Duration::from_secs(120)));
    assert!(out.contains(", 0 failed"), "{out}");
    if let Some(out) = under_valgrind(&exe, &[]) {
        assert!(out.contains(", 0 failed"), "{out}");
    }
}

/// `libterroir.so` loaded with `dlopen` by a program not linked with it
/// (`tests/c/dlopen.c`): a thread older than the load and the main thread
/// are no workers, a task knows its worker, and task groups (whose fast
/// paths find the worker by the thread pointer, `src/sched/current.rs`)
/// work in a task. The library must not use static TLS (the
/// initial-exec model): a library that does takes its whole TLS segment
/// from glibc's small surplus at `dlopen`, and terroir's does not fit.
#[test]
fn a_dlopened_library_finds_its_workers() {
    let exe = compile("dlopen", &["capi/tests/c/dlopen.c"], &["-ldl", "-lpthread"]);
    let so = lib_dir().join("libterroir.so");
    match Command::new("readelf").arg("-d").arg(&so).output() {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(
                !text.contains("STATIC_TLS"),
                "libterroir.so uses static TLS, which can make a dlopen fail:\n{text}"
            );
        }
        _ => eprintln!("readelf not found: the STATIC_TLS flag is not checked"),
    }
    let out = stdout(&run(
        Command::new(&exe).arg(&so).arg("2000"),
        Duration::from_secs(120),
    ));
    assert!(out.contains("dlopen 10 passed, 0 failed"), "{out}");
}

/// Spawns, waits and destroys racing between threads outside the pool
/// (`tests/c/group_race.c`): exact task counts, documented results, no hang.
#[test]
fn group_calls_racing_between_threads_keep_their_counts() {
    let exe = compile_shared("group_race", &["capi/tests/c/group_race.c"]);
    let out = stdout(&run(Command::new(&exe).arg("3"), Duration::from_secs(300)));
    assert!(out.contains("group_race rounds=3 ok"), "{out}");
    if let Some(out) = under_valgrind(&exe, &["1"]) {
        assert!(out.contains("group_race rounds=1 ok"), "{out}");
    }
}

/// Waits on one group from workers of its pool, from another pool's
/// workers and from the main thread, with strictly placed tasks
/// (`tests/c/group_waits.c`): every task runs, every call but the refused
/// stacked waits succeeds, no hang.
#[test]
fn group_waits_from_workers_of_two_pools_end() {
    let exe = compile_shared("group_waits", &["capi/tests/c/group_waits.c"]);
    let out = stdout(&run(Command::new(&exe).arg("50"), Duration::from_secs(300)));
    assert!(
        out.contains("group_waits rounds=50") && out.contains(" ok"),
        "{out}"
    );
    if let Some(out) = under_valgrind(&exe, &["3"]) {
        assert!(
            out.contains("group_waits rounds=3") && out.contains(" ok"),
            "{out}"
        );
    }
}

/// `terroir_parallel_for` (`tests/c/parallel_for.c`): every index once
/// under both schedules, every grain, data ranges, nested loops, ranges
/// ending at `SIZE_MAX`, and each bad input's error code.
#[test]
fn parallel_for_covers_each_index_once_and_refuses_bad_input() {
    let exe = compile_shared("parallel_for", &["capi/tests/c/parallel_for.c"]);
    let out = stdout(&run(
        Command::new(&exe).arg("100003"),
        Duration::from_secs(300),
    ));
    assert!(out.contains(" passed, 0 failed"), "{out}");
    if let Some(out) = under_valgrind(&exe, &["2000"]) {
        assert!(out.contains(" passed, 0 failed"), "{out}");
    }
}

/// `terroir_label_push` / `terroir_label_pop` (`tests/c/labels.c`):
/// pushed regions recorded like `terroir_label`'s (counted in a report of
/// two recordings), names freed after the push, and each error code.
#[test]
fn pushed_labels_are_recorded_and_bad_pops_refused() {
    let exe = compile_shared("labels", &["capi/tests/c/labels.c"]);
    let out = stdout(&run(
        Command::new(&exe).arg("200"),
        Duration::from_secs(300),
    ));
    assert!(out.contains(" passed, 0 failed"), "{out}");
    if let Some(out) = under_valgrind(&exe, &["20"]) {
        assert!(out.contains(" passed, 0 failed"), "{out}");
    }
}

/// The pool statistics (`tests/c/stats.c`): the counts of a known
/// workload, a reset, a newer header's struct, and each error code.
#[test]
fn pool_statistics_count_a_known_workload_and_refuse_bad_input() {
    let exe = compile_shared("stats", &["capi/tests/c/stats.c"]);
    let out = stdout(&run(
        Command::new(&exe).arg("200"),
        Duration::from_secs(300),
    ));
    assert!(out.contains(" passed, 0 failed"), "{out}");
    if let Some(out) = under_valgrind(&exe, &["20"]) {
        assert!(out.contains(" passed, 0 failed"), "{out}");
    }
}

/// The after and pushed place kinds (`tests/c/places.c`): tasks with one
/// strict key on one worker, pushed tasks on the node of their data and in
/// the statistics, and each error code.
#[test]
fn after_and_pushed_places_run_where_they_say() {
    let exe = compile_shared("places", &["capi/tests/c/places.c"]);
    let out = stdout(&run(
        Command::new(&exe).arg("100"),
        Duration::from_secs(300),
    ));
    assert!(out.contains(" passed, 0 failed"), "{out}");
    if let Some(out) = under_valgrind(&exe, &["10"]) {
        assert!(out.contains(" passed, 0 failed"), "{out}");
    }
}

/// Blocked and interleaved memory over node lists
/// (`tests/c/layouts.c`): shares in node order, each byte's node, a loop
/// over the memory, and each error code.
#[test]
fn blocked_and_interleaved_memory_is_where_its_layout_says() {
    let exe = compile_shared("layouts", &["capi/tests/c/layouts.c"]);
    let out = stdout(&run(Command::new(&exe).arg("64"), Duration::from_secs(300)));
    assert!(out.contains(" passed, 0 failed"), "{out}");
    if let Some(out) = under_valgrind(&exe, &["8"]) {
        assert!(out.contains(" passed, 0 failed"), "{out}");
    }
}

#[test]
fn c_examples_compute_what_sequential_code_does() {
    /// An example: its name (also its source's), its arguments for a plain
    /// run and for the (much slower) run under Valgrind.
    struct Case {
        name: &'static str,
        args: &'static [&'static str],
        valgrind_args: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "fib",
            args: &["22", "2"],
            valgrind_args: &["18", "1"],
        },
        Case {
            name: "nqueens",
            args: &["8", "2"],
            valgrind_args: &["6", "1"],
        },
        Case {
            name: "health",
            args: &["4", "30", "2"],
            valgrind_args: &["3", "10", "1"],
        },
        Case {
            name: "triad",
            args: &["100003", "2"],
            valgrind_args: &["2000", "1"],
        },
    ];
    for Case {
        name,
        args,
        valgrind_args,
    } in cases
    {
        let exe = compile_shared(name, &[&format!("examples/c/{name}.c")]);
        let out = stdout(&run(
            Command::new(&exe).args(args),
            Duration::from_secs(120),
        ));
        check_example_line(&out, name);
        if let Some(out) = under_valgrind(&exe, valgrind_args) {
            check_example_line(&out, name);
        }
    }
}

/// Checks the files `examples/c/report.c` wrote into `dir`: all there, the
/// JSON reports parse, and both runs have every labelled leaf.
fn check_report_dir(dir: &Path, out: &str) {
    let line = out
        .lines()
        .find(|l| l.starts_with("report "))
        .unwrap_or_else(|| panic!("no report line in {out:?}"));
    let leaves: u64 = field(line, "leaves").parse().unwrap();
    for name in [
        "report.json",
        "report.csv",
        "trace.json",
        "report.svg",
        "report.txt",
        "measure.json",
    ] {
        let path = dir.join(name);
        let len = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .len();
        assert!(len > 0, "{} is empty", path.display());
    }
    let json = |name: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"))
    };
    for name in ["report.json", "measure.json"] {
        let report = json(name);
        let labels = report["labels"].as_array().expect("labels");
        let leaf = labels
            .iter()
            .find(|l| l["label"] == "fib-leaf")
            .unwrap_or_else(|| panic!("{name}: no fib-leaf label in {report:#}"));
        assert_eq!(leaf["baseline"]["count"], leaves, "{name}: {leaf:#}");
        assert_eq!(leaf["parallel"]["count"], leaves, "{name}: {leaf:#}");
        assert!(report["threads"].as_u64().unwrap() >= 1, "{name}");
    }
    let trace = json("trace.json");
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    // The parallel run's processes (one per node) and the baseline's.
    let slices = |baseline: bool| {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"] == "fib-leaf")
            .filter(|e| (e["pid"].as_u64().unwrap() >= 1000) == baseline)
            .count() as u64
    };
    assert_eq!(slices(false), leaves, "trace.json, parallel run");
    assert_eq!(slices(true), leaves, "trace.json, baseline");
    let csv = std::fs::read_to_string(dir.join("report.csv")).unwrap();
    assert!(csv.lines().any(|l| l.starts_with("fib-leaf,")), "{csv}");
    let svg = std::fs::read_to_string(dir.join("report.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    let text = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    assert!(
        text.contains("fib-leaf") && text.contains("work-time inflation"),
        "{text}"
    );
}

/// `examples/c/report.c`: records fib with labelled leaves through the C
/// API (start/stop on a one-worker pool and on a pool, and
/// `terroir_report_measure`), writes every format; the files are there and
/// the JSON has the leaves. Again under Valgrind when installed.
#[test]
fn c_report_example_writes_every_format() {
    let exe = compile_shared("report", &["examples/c/report.c"]);
    let dir = out_dir().join("report-out");
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.display().to_string();
    let out = stdout(&run(
        Command::new(&exe).args([d.as_str(), "22", "2"]),
        Duration::from_secs(120),
    ));
    check_example_line(&out, "report");
    check_report_dir(&dir, &out);
    let vdir = out_dir().join("report-out-valgrind");
    let _ = std::fs::remove_dir_all(&vdir);
    let vd = vdir.display().to_string();
    if let Some(out) = under_valgrind(&exe, &[vd.as_str(), "15", "2"]) {
        check_example_line(&out, "report");
        check_report_dir(&vdir, &out);
    }
}

#[test]
fn openmp_twins_compute_the_same() {
    let probe = out_dir().join("omp_probe.c");
    std::fs::write(
        &probe,
        "#include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}\n",
    )
    .unwrap();
    let ok = Command::new(cc())
        .args(["-fopenmp", "-o"])
        .arg(out_dir().join("omp_probe"))
        .arg(&probe)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("the C compiler has no OpenMP (-fopenmp): the OpenMP twins are skipped");
        return;
    }
    for (name, args) in [
        ("fib_omp", &["20", "1"][..]),
        ("nqueens_omp", &["7", "1"]),
        ("health_omp", &["3", "10", "1"]),
        ("triad_omp", &["100003", "1"]),
    ] {
        let exe = compile(name, &[&format!("examples/c/{name}.c")], &["-fopenmp"]);
        let out = stdout(&run(
            Command::new(&exe).args(args),
            Duration::from_secs(120),
        ));
        check_example_line(&out, name.trim_end_matches("_omp"));
    }
}

/// `examples/c/omp_mix.c`, terroir tasks beside OpenMP regions in one
/// program, in both modes and under the settings the README recommends
/// (`examples/c/omp_mix.sh` times them): both runtimes compute what the
/// sequential loop does.
#[test]
fn omp_mix_runs_both_runtimes_in_one_program() {
    let probe = out_dir().join("omp_mix_probe.c");
    std::fs::write(
        &probe,
        "#include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}\n",
    )
    .unwrap();
    let ok = Command::new(cc())
        .args(["-fopenmp", "-o"])
        .arg(out_dir().join("omp_mix_probe"))
        .arg(&probe)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("the C compiler has no OpenMP (-fopenmp): omp_mix is skipped");
        return;
    }
    let dir = lib_dir().display().to_string();
    let exe = compile(
        "omp_mix",
        &["examples/c/omp_mix.c"],
        &[
            "-fopenmp",
            "-L",
            &dir,
            "-lterroir",
            "-lpthread",
            &format!("-Wl,-rpath,{dir}"),
        ],
    );
    for mode in ["alternate", "concurrent"] {
        for passive in [false, true] {
            let mut cmd = Command::new(&exe);
            cmd.args([mode, "5", "3001", "1"]);
            if passive {
                cmd.env("OMP_WAIT_POLICY", "passive")
                    .env("TERROIR_PIN", "0")
                    .env("OMP_NUM_THREADS", "1")
                    .env("TERROIR_NUM_THREADS", "1");
            }
            let out = stdout(&run(&mut cmd, Duration::from_secs(120)));
            assert!(
                out.starts_with(&format!("omp_mix mode={mode} ")) && out.contains("check=ok"),
                "{out}"
            );
        }
    }
}

/// `examples/c/group_cost.c` (and its libgomp twin, when the compiler has
/// OpenMP) run and print their costs; under Valgrind, a million-group
/// program in miniature leaks nothing.
#[test]
fn group_cost_programs_run() {
    fn check(out: &str, runtime: &str) {
        let line = out
            .lines()
            .find(|l| l.starts_with("group_cost "))
            .unwrap_or_else(|| panic!("no group_cost line in {out:?}"));
        assert_eq!(field(line, "runtime"), runtime, "{line}");
        assert_eq!(field(line, "tasks"), "3", "{line}");
        // Each runtime's own comparison: a wait with nothing to wait for,
        // and libgomp's empty taskgroup.
        let own = if runtime == "terroir" {
            "wait_ns"
        } else {
            "taskgroup_ns"
        };
        for key in [
            "empty_ns",
            "group_ns",
            "per_task_ns",
            "empty_cpu_ns",
            "group_cpu_ns",
            "per_task_cpu_ns",
            own,
        ] {
            let v: f64 = field(line, key)
                .parse()
                .unwrap_or_else(|e| panic!("{key} in {line}: {e}"));
            assert!(v.is_finite() && v > 0.0, "{line}");
        }
    }
    let exe = compile_shared("group_cost", &["examples/c/group_cost.c"]);
    let out = stdout(&run(
        Command::new(&exe).args(["20000", "3", "2"]),
        Duration::from_secs(60),
    ));
    check(&out, "terroir");
    if let Some(out) = under_valgrind(&exe, &["200", "3", "1"]) {
        check(&out, "terroir");
    }
    let omp = Command::new(cc())
        .args(["-fopenmp", "-O1", "-o"])
        .arg(out_dir().join("group_cost_omp"))
        .arg(root().join("examples/c/group_cost_omp.c"))
        .output()
        .is_ok_and(|o| o.status.success());
    if omp {
        let out = stdout(&run(
            Command::new(out_dir().join("group_cost_omp")).args(["20000", "3", "2"]),
            Duration::from_secs(60),
        ));
        check(&out, "libgomp");
    }
}

#[test]
fn static_library_links_and_runs() {
    let a = lib_dir().join("libterroir.a").display().to_string();
    let mut flags = vec![a.as_str()];
    flags.extend(NATIVE_STATIC_LIBS);
    let exe = compile("fib_static", &["examples/c/fib.c"], &flags);
    let out = stdout(&run(
        Command::new(&exe).args(["20", "1"]),
        Duration::from_secs(60),
    ));
    check_example_line(&out, "fib");
}

/// `examples/c/bench.sh`'s baseline: `fib.c` with `-DFIB_JOIN=noop_join`
/// (a join that only calls its two tasks) still computes fib.
#[test]
fn fib_builds_against_the_no_scheduler_join() {
    let dir = lib_dir().display().to_string();
    let exe = compile(
        "fib_noop",
        &["examples/c/fib.c", "examples/c/noop_join.c"],
        &[
            "-DFIB_JOIN=noop_join",
            "-L",
            &dir,
            "-lterroir",
            &format!("-Wl,-rpath,{dir}"),
        ],
    );
    let out = stdout(&run(
        Command::new(&exe).args(["20", "1"]),
        Duration::from_secs(60),
    ));
    check_example_line(&out, "fib");
}

/// Two shared objects that both use terroir: through `libterroir.so` they
/// share one global pool (the first to initialize it wins, the second sees
/// it); each with its own copy of `libterroir.a` (symbols kept private with
/// `--exclude-libs`), each has a global pool of its own: the rayon#816
/// situation the README warns about.
#[test]
fn shared_library_gives_one_global_pool_per_process() {
    let dir = out_dir();
    let plugin = capi().join("tests/c/plugin.c");
    let main = capi().join("tests/c/two_plugins.c");
    let libdir = lib_dir().display().to_string();
    let build_plugin = |name: &str, link: &[&str]| {
        let so = dir.join(format!("lib{name}.so"));
        let mut cmd = Command::new(cc());
        cmd.args([
            "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-shared", "-fPIC",
        ])
        .arg("-I")
        .arg(capi().join("include"))
        .arg(format!("-DPLUGIN_NAME=plugin_{name}"))
        .arg(&plugin)
        .args(link)
        .arg("-o")
        .arg(&so);
        run(&mut cmd, Duration::from_secs(60));
    };
    let rpath = format!("-Wl,-rpath,{libdir}");
    build_plugin("dyn_a", &["-L", &libdir, "-lterroir", &rpath]);
    build_plugin("dyn_b", &["-L", &libdir, "-lterroir", &rpath]);
    let a = lib_dir().join("libterroir.a").display().to_string();
    let mut static_link = vec!["-Wl,--exclude-libs,ALL", a.as_str()];
    static_link.extend(NATIVE_STATIC_LIBS);
    build_plugin("static_a", &static_link);
    build_plugin("static_b", &static_link);

    let d = dir.display().to_string();
    let build_main = |name: &str, a: &str, b: &str| {
        let exe = dir.join(name);
        run(
            Command::new(cc())
                .args(["-std=c11", "-O1", "-g", "-Wall", "-Wextra"])
                .arg("-I")
                .arg(capi().join("include"))
                .arg(format!("-DFIRST=plugin_{a}"))
                .arg(format!("-DSECOND=plugin_{b}"))
                .arg(&main)
                .arg(format!("-L{d}"))
                .arg(format!("-l{a}"))
                .arg(format!("-l{b}"))
                .arg(format!("-Wl,-rpath,{d}"))
                .arg("-o")
                .arg(&exe),
            Duration::from_secs(60),
        );
        exe
    };
    let shared = build_main("two_plugins_shared", "dyn_a", "dyn_b");
    let out = stdout(&run(&mut Command::new(&shared), Duration::from_secs(60)));
    assert!(out.contains("global pools: 1"), "{out}");
    let separate = build_main("two_plugins_static", "static_a", "static_b");
    let out = stdout(&run(&mut Command::new(&separate), Duration::from_secs(60)));
    assert!(out.contains("global pools: 2"), "{out}");
}

/// Every function the header declares is exported by `libterroir.so`, and
/// every exported `terroir_*` function is declared (the header is
/// generated by cbindgen; `scripts/check-header.sh` checks it is current).
#[test]
fn header_declares_exactly_the_exported_functions() {
    let header = std::fs::read_to_string(capi().join("include/terroir.h")).unwrap();
    let mut declared: Vec<String> = header
        .lines()
        .filter(|l| !l.trim_start().starts_with("//") && !l.trim_start().starts_with('*'))
        .filter_map(|l| {
            let i = l.find("terroir_")?;
            let rest = &l[i..];
            let end = rest.find('(')?;
            let name = &rest[..end];
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
                .then(|| name.to_owned())
        })
        .collect();
    declared.sort();
    declared.dedup();
    let nm = run(
        Command::new("nm")
            .args(["-D", "--defined-only"])
            .arg(lib_dir().join("libterroir.so")),
        Duration::from_secs(60),
    );
    let mut exported: Vec<String> = stdout(&nm)
        .lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let (kind, name) = (parts.nth(1)?, parts.next()?);
            (kind == "T" && name.starts_with("terroir_")).then(|| name.to_owned())
        })
        .collect();
    exported.sort();
    assert!(declared.len() >= 20, "{declared:?}");
    assert_eq!(declared, exported);
}

/// The header compiles as strict C99 and as C++, its initializers and
/// version macros too.
#[test]
fn header_compiles_as_c99_and_cpp() {
    let dir = out_dir();
    let src = dir.join("header_only.c");
    std::fs::write(
        &src,
        // The initializers name every field (-Wextra warns of a missing
        // one: a field added without updating the macro).
        "#include <terroir.h>\nstatic terroir_place p;\n\
         static terroir_pool_config c = TERROIR_POOL_CONFIG_INIT;\n\
         static terroir_record_options o = TERROIR_RECORD_OPTIONS_INIT;\n\
         static terroir_for_options f = TERROIR_FOR_OPTIONS_INIT;\n\
         static terroir_stats s = TERROIR_STATS_INIT;\n\
         static terroir_node_stats n = TERROIR_NODE_STATS_INIT;\n\
         int main(void) { (void)p; (void)c; (void)o; (void)f; (void)s; (void)n;\n\
         return TERROIR_VERSION_MAJOR * 0 + TERROIR_ERROR_OK; }\n",
    )
    .unwrap();
    run(
        Command::new(cc())
            .args(["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-c"])
            .arg("-I")
            .arg(capi().join("include"))
            .arg(&src)
            .arg("-o")
            .arg(dir.join("header_only.o")),
        Duration::from_secs(60),
    );
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned());
    if Command::new(&cxx).arg("--version").output().is_err() {
        eprintln!("no C++ compiler: the C++ check of the header is skipped");
        return;
    }
    let cpp = dir.join("header_only.cpp");
    std::fs::copy(&src, &cpp).unwrap();
    run(
        Command::new(cxx)
            .args(["-Wall", "-Wextra", "-Werror", "-c"])
            .arg("-I")
            .arg(capi().join("include"))
            .arg(&cpp)
            .arg("-o")
            .arg(dir.join("header_only_cpp.o")),
        Duration::from_secs(60),
    );
}
