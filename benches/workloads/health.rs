//! `health`: BOTS Health (Duran et al. 2009, after the Olden benchmark), a
//! simulation of a country's health system: a tree of villages, each with a
//! hospital.
//!
//! # The model (as in BOTS' `omp-tasks/health/health.c`)
//!
//! The tree has `levels` levels (BOTS' `sim_level`); every village above the
//! leaves has [`CITIES`] children (`sim_cities`). A village at level `l`
//! (leaves are level 1, the root is level `levels`) has `2^l` hospital staff
//! and `10 · 2^l` inhabitants (`sim_population_ratio`). Each time step, a
//! village first simulates its children, then, in BOTS' order:
//!
//! 1. *inside*: treated patients count down their convalescence; when it
//!    ends they go home (a staff member is freed);
//! 2. *assess*: assessed patients count down; at the end, with probability
//!    0.1 they need treatment, and then, with probability 0.15 (never at the
//!    root), are sent up to the parent village's hospital, otherwise treated
//!    here for 12 steps; the others go home;
//! 3. *waiting*: waiting patients are assessed (2 steps) while staff is free,
//!    the others wait one more step;
//! 4. (after the children have finished) *realloc*: the patients the
//!    children sent up are admitted, in order of patient id (as BOTS does,
//!    which makes the result independent of the children's order);
//! 5. *population*: each inhabitant falls ill with probability 0.002 and
//!    goes to the hospital (assessed at once if staff is free, else waits).
//!
//! Randomness is BOTS' own `my_rand` (a Park–Miller generator, in its
//! current architecture-independent `int32_t` form, wrapping where the C
//! code overflows) on a per-patient seed, the patients' seeds drawn from
//! their village's seed `vid · (127773 + 23)`; patient ids, village ids and
//! the lists' orders follow BOTS' `allocate_village` exactly. So every
//! random draw depends only on the patient, and every list is processed in
//! the same order by every version: the result does not depend on
//! scheduling. It reproduces BOTS' published check values exactly: at
//! `levels = 4` (`small.input`: 131,200 people, 96,718 check-ins, 128,997
//! at home, 1,406 waiting, 525 in assessment, 272 inside, average stay
//! 5.167470) and at `levels = 3` (`test.input`); see [`bots_summary`].
//!
//! # Parallelism
//!
//! As BOTS' cut-off versions (`MANUAL_CUTOFF`, default cut-off 2): a village
//! within [`CUTOFF`] levels of the root simulates each child village as a
//! task, does steps 1–3 of its own while the children run, waits for them
//! (BOTS' `taskwait`; here the end of a [`terroir::scope`]), then does steps
//! 4–5. Deeper villages simulate their subtrees inline. With the default
//! tree that is 18 + 324 tasks per step, each simulating 19 villages (about
//! 400 people). The root's steps are one sequence of calls inside
//! [`ThreadPool::install`].
//!
//! # Data placement
//!
//! The tree is cut into *regions*: the root's own inhabitants, and one
//! region per subtree under each of the root's children. The subtrees are
//! dealt to the topology's nodes in turn (child `c` to node
//! `c mod nodes`; the root's region to the first node). Every patient's
//! record (seed, time, time left, hospitals visited: BOTS' `struct
//! Patient` without its links) lives for the whole run in its home region's
//! [`NodeVec`], bound to the region's node before first touch; a village's
//! lists (population, waiting, assess, inside, sent-up) hold references to
//! records, in ordinary heap `Vec`s. A task is spawned with
//! [`Place::data`] of its village's region, so under the `Locality`
//! policies it runs on the node holding its patients. Patients sent up the
//! tree keep their record where it was born, so a parent village near the
//! root touches its referrals' records remotely, as BOTS' patients
//! (allocated once, relinked between lists) are.
//!
//! Records are updated through relaxed atomics (plain loads and stores on
//! x86-64), so records of one region can be written by the tasks of
//! different villages without `unsafe`; every record is only touched by the
//! task simulating the village whose list holds it, and lists change hands
//! only across the scope's join, so the program has no data race and the
//! atomics order nothing.
//!
//! # How it differs from BOTS
//!
//! - BOTS' lists are doubly linked lists of `malloc`ed patients, with an
//!   O(length) walk to append; here a list is a vector of references and a
//!   pass over it keeps the stayers in place (the same orders, without the
//!   quadratic appends).
//! - A child appends referrals to its own *sent-up* list, which the parent
//!   takes after the join, instead of appending to the parent's `realloc`
//!   list under a lock; the parent admits them sorted by id either way.
//! - The branching is fixed at [`CITIES`] = 18 children, the value of BOTS'
//!   `test` and `small` inputs (its `medium` has 36, its `large` 24 with 5
//!   levels; Olden's original Health has 4); only the depth varies.
//! - BOTS' plain build spawns a task per child village at every level; this
//!   is its cut-off build (tasks only within [`CUTOFF`] levels of the
//!   root), whose tasks are not all a few hundred nanoseconds long.
//! - The steps run inside one `install`, as BOTS' single task runs
//!   them; the result is checked as a checksum of BOTS' summary and every
//!   person's final state (id, list, seed, time, time left, check-ins),
//!   which is stricter than BOTS' summary check.
//!
//! # Size
//!
//! The parameter is the number of levels `L` (1..=5), with 18 children per
//! village, and 365 steps (BOTS' `sim_time`, [`STEPS`]) except at Large.
//! Presets: Small `L = 2` (19 villages, 400 people, 365 steps: the tests),
//! Default `L = 4` (6,175 villages, 131,200 people, 365 steps: exactly
//! BOTS' `small.input`), Large `L = 5` (111,151 villages, 2,361,920 people,
//! [`LARGE_STEPS`] = 100 steps). A numeric size `L` runs 365 steps.
//!
//! # Kind of program
//!
//! Irregular, pointer-chasing and memory-bound: little arithmetic per
//! patient (one or two random draws), lists of references into records
//! scattered by the moves; fine-grained (a few microseconds per task) and
//! mildly imbalanced (regions differ in how many of their patients are ill).
//! The result is the BOTS summary plus every patient's final state.

use std::sync::atomic::{AtomicI32, Ordering::Relaxed};
use std::sync::Mutex;

use super::{checksum, Size, Workload};
use terroir::numa::{NodeId, Topology};
use terroir::pool::NodeVec;
use terroir::{Place, ThreadPool};

/// Children per village (BOTS' `sim_cities` in `small.input`).
pub const CITIES: usize = 18;
/// Inhabitants per staff member (BOTS' `sim_population_ratio`).
const POPULATION_RATIO: usize = 10;
/// Simulated time steps (BOTS' `sim_time`): Small, Default and a numeric
/// size.
pub const STEPS: usize = 365;
/// Simulated time steps of the Large preset (365 would take about 12 s
/// sequentially on the 2-core test machine).
pub const LARGE_STEPS: usize = 100;
/// Steps an assessment takes (`sim_assess_time`).
const ASSESS_TIME: i32 = 2;
/// Steps a treatment takes (`sim_convalescence_time`).
const CONVALESCENCE_TIME: i32 = 12;
/// The seed all village seeds derive from (`sim_seed`).
const SIM_SEED: i32 = 23;
/// Probability of falling ill, per inhabitant and step (`sim_get_sick_p`).
const GET_SICK_P: f32 = 0.002;
/// Probability that an assessed patient needs treatment
/// (`sim_convalescence_p`).
const CONVALESCENCE_P: f32 = 0.100;
/// Probability that a patient needing treatment is sent up
/// (`sim_realloc_p`).
const REALLOC_P: f32 = 0.150;
/// Villages at depth `< CUTOFF` (the root is depth 0) simulate their
/// children as tasks; deeper subtrees run inline (BOTS' default cut-off).
pub const CUTOFF: u32 = 2;
/// The most levels accepted (level 6 would hold 43 million people).
const MAX_LEVELS: usize = 5;

/// Park–Miller multiplier (BOTS' `IA`).
const IA: i32 = 16807;
/// Park–Miller modulus, 2^31 − 1 (BOTS' `IM`).
const IM: i32 = 2_147_483_647;
/// Schrage's quotient `IM / IA` (BOTS' `IQ`).
const IQ: i32 = 127_773;
/// Schrage's remainder `IM mod IA` (BOTS' `IR`).
const IR: i32 = 2836;
/// The value BOTS' `my_rand` XORs the state with (BOTS' `MASK`).
const MASK: i32 = 123_459_876;

/// BOTS' `my_rand` (its current, architecture-independent `int32_t`
/// version): advances `seed` and returns a `float` in `[0, 1)`. The C code
/// lets `idum * IM` (and the village seeds' `vid * (IQ + sim_seed)`)
/// overflow `int32_t`; gcc wraps, and so does this.
fn my_rand(seed: &mut i32) -> f32 {
    let mut idum = *seed ^ MASK;
    let k = idum / IQ;
    idum = IA * (idum - k * IQ) - IR * k;
    idum ^= MASK;
    if idum < 0 {
        idum += IM;
    }
    *seed = idum.wrapping_mul(IM);
    (1.0f64 / f64::from(IM)) as f32 * idum as f32
}

/// One person's record: BOTS' `struct Patient` without the list links and
/// the home-village pointer. Fields are relaxed atomics (see the module
/// docs: no two tasks ever touch one record at the same time).
struct Patient {
    /// BOTS' patient id: the allocation order, the key of admissions.
    id: u32,
    /// This person's random state.
    seed: AtomicI32,
    /// Steps spent in hospitals (waiting, assessed or treated).
    time: AtomicI32,
    /// Steps left of the current assessment or treatment.
    time_left: AtomicI32,
    /// Hospitals checked into.
    hosps_visited: AtomicI32,
}

impl Patient {
    /// The next random draw from this person's seed.
    fn rand(&self) -> f32 {
        let mut s = self.seed.load(Relaxed);
        let r = my_rand(&mut s);
        self.seed.store(s, Relaxed);
        r
    }

    /// Adds `d` steps to the time spent in hospitals.
    fn add_time(&self, d: i32) {
        self.time.store(self.time.load(Relaxed) + d, Relaxed);
    }

    /// Counts down the current assessment or treatment; the steps left.
    fn count_down(&self) -> i32 {
        let left = self.time_left.load(Relaxed) - 1;
        self.time_left.store(left, Relaxed);
        left
    }

    /// Starts an assessment or treatment of `steps` steps (BOTS adds the
    /// whole duration to the time at once).
    fn start(&self, steps: i32) {
        self.time_left.store(steps, Relaxed);
        self.add_time(steps);
    }
}

/// Where a person's record lives: region (index into the arenas) and slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PRef {
    /// The region whose arena holds the record.
    region: u32,
    /// The record's index in that arena.
    slot: u32,
}

/// One village (BOTS' `struct Village`).
struct Village {
    /// BOTS' level: 1 for leaves, `levels` for the root.
    level: u32,
    /// The region this village's data belongs to.
    region: usize,
    /// The child villages, in BOTS' list order.
    children: Vec<Village>,
    /// The village's people and hospital.
    hosp: Hosp,
}

/// A village's people and hospital (BOTS' `population` and `struct Hosp`):
/// everything steps 1-3 touch.
struct Hosp {
    /// Staff available for a new assessment or treatment.
    free_personnel: i32,
    /// Inhabitants at home.
    population: Vec<PRef>,
    /// Patients waiting for staff.
    waiting: Vec<PRef>,
    /// Patients being assessed.
    assess: Vec<PRef>,
    /// Patients being treated.
    inside: Vec<PRef>,
    /// Patients sent up to the parent's hospital during this step (taken by
    /// the parent after the children's join: BOTS' parent `realloc` list).
    up: Vec<PRef>,
}

/// The whole mutable state: the record arenas (one per region) and the
/// village tree.
struct State {
    /// Patient records, one placed vector per region.
    arenas: Vec<NodeVec<Patient>>,
    /// The root village.
    root: Village,
}

/// Builds the tree and the records as BOTS' `allocate_village` does.
struct Builder<'a> {
    /// Records per region, in allocation (= id) order.
    records: Vec<Vec<(u32, i32)>>,
    /// The next patient id (BOTS' `sim_pid`).
    next_pid: u32,
    /// The nodes regions are dealt to.
    nodes: &'a [NodeId],
}

impl Builder<'_> {
    /// BOTS' `allocate_village(level, vid)`, the village's data in `region`
    /// (`None`: this is the root, whose children start regions
    /// `1..=CITIES`).
    fn village(&mut self, level: u32, vid: i32, region: Option<usize>) -> Village {
        let personnel = 1i32 << level;
        let population = personnel as usize * POPULATION_RATIO;
        let here = region.unwrap_or(0);
        let mut seed = vid.wrapping_mul(IQ + SIM_SEED);
        let mut people = Vec::with_capacity(population);
        for _ in 0..population {
            let arena = &mut self.records[here];
            people.push(PRef {
                region: here as u32,
                slot: arena.len() as u32,
            });
            arena.push((self.next_pid, seed));
            self.next_pid += 1;
            my_rand(&mut seed);
        }
        let mut children = Vec::new();
        if level > 1 {
            // BOTS allocates child `CITIES` first and links each new child
            // in front, so the list runs 1..=CITIES.
            for i in (1..=CITIES).rev() {
                let r = region.unwrap_or(i);
                children.push(self.village(level - 1, vid * CITIES as i32 + i as i32, Some(r)));
            }
            children.reverse();
        }
        Village {
            level,
            region: here,
            children,
            hosp: Hosp {
                free_personnel: personnel,
                population: people,
                waiting: Vec::new(),
                assess: Vec::new(),
                inside: Vec::new(),
                up: Vec::new(),
            },
        }
    }

    /// The node of `region`: the root's on the first node, subtree `i`
    /// (`1..=CITIES`) on node `(i - 1) mod nodes`.
    fn node_of(&self, region: usize) -> NodeId {
        self.nodes[region.saturating_sub(1) % self.nodes.len()]
    }
}

/// Builds the initial state: records in placed arenas, the village tree.
fn build(levels: u32, nodes: &[NodeId]) -> Result<State, String> {
    if nodes.is_empty() {
        return Err("health: the topology has no node".into());
    }
    let regions = if levels > 1 { CITIES + 1 } else { 1 };
    let mut b = Builder {
        records: vec![Vec::new(); regions],
        next_pid: 0,
        nodes,
    };
    let root = b.village(levels, 0, None);
    let mut arenas = Vec::with_capacity(regions);
    for (r, recs) in b.records.iter().enumerate() {
        let node = b.node_of(r);
        let arena = NodeVec::from_fn_on(recs.len(), node, |i| Patient {
            id: recs[i].0,
            seed: AtomicI32::new(recs[i].1),
            time: AtomicI32::new(0),
            time_left: AtomicI32::new(0),
            hosps_visited: AtomicI32::new(0),
        })
        .map_err(|e| format!("health: region {r} on {node}: {e}"))?;
        arenas.push(arena);
    }
    Ok(State { arenas, root })
}

/// The record behind a reference.
fn rec(arenas: &[NodeVec<Patient>], p: PRef) -> &Patient {
    &arenas[p.region as usize][p.slot as usize]
}

/// BOTS' `put_in_hosp`: a check-in, assessed at once if staff is free.
fn put_in_hosp(
    arenas: &[NodeVec<Patient>],
    free: &mut i32,
    assess: &mut Vec<PRef>,
    waiting: &mut Vec<PRef>,
    p: PRef,
) {
    let r = rec(arenas, p);
    r.hosps_visited
        .store(r.hosps_visited.load(Relaxed) + 1, Relaxed);
    if *free > 0 {
        *free -= 1;
        assess.push(p);
        r.start(ASSESS_TIME);
    } else {
        waiting.push(p);
    }
}

/// Steps 1–3 of a village's step (BOTS' `check_patients_inside`,
/// `check_patients_assess_par`, `check_patients_waiting`): only the
/// village's own lists, so they may run while its children run.
fn step_own(arenas: &[NodeVec<Patient>], h: &mut Hosp, is_root: bool) {
    let Hosp {
        free_personnel: free,
        population,
        waiting,
        assess,
        inside,
        up,
    } = h;
    inside.retain(|&p| {
        if rec(arenas, p).count_down() == 0 {
            *free += 1;
            population.push(p);
            false
        } else {
            true
        }
    });
    assess.retain(|&p| {
        let r = rec(arenas, p);
        if r.count_down() != 0 {
            return true;
        }
        if r.rand() < CONVALESCENCE_P {
            if r.rand() > REALLOC_P || is_root {
                inside.push(p);
                r.start(CONVALESCENCE_TIME);
            } else {
                *free += 1;
                up.push(p);
            }
        } else {
            *free += 1;
            population.push(p);
        }
        false
    });
    waiting.retain(|&p| {
        let r = rec(arenas, p);
        if *free > 0 {
            *free -= 1;
            r.start(ASSESS_TIME);
            assess.push(p);
            false
        } else {
            r.add_time(1);
            true
        }
    });
}

/// Steps 4–5 (BOTS' `check_patients_realloc`, `check_patients_population`),
/// after the children have finished the step.
fn step_after_children(arenas: &[NodeVec<Patient>], v: &mut Village) {
    let mut realloc: Vec<PRef> = Vec::new();
    for c in &mut v.children {
        realloc.append(&mut c.hosp.up);
    }
    realloc.sort_unstable_by_key(|&p| rec(arenas, p).id);
    let Hosp {
        free_personnel: free,
        population,
        waiting,
        assess,
        ..
    } = &mut v.hosp;
    for p in realloc {
        put_in_hosp(arenas, free, assess, waiting, p);
    }
    population.retain(|&p| {
        if rec(arenas, p).rand() < GET_SICK_P {
            put_in_hosp(arenas, free, assess, waiting, p);
            false
        } else {
            true
        }
    });
}

/// BOTS' `sim_village_seq`: one step of `v` and its subtree.
fn sim_seq(arenas: &[NodeVec<Patient>], v: &mut Village, is_root: bool) {
    for c in &mut v.children {
        sim_seq(arenas, c, false);
    }
    step_own(arenas, &mut v.hosp, is_root);
    step_after_children(arenas, v);
}

/// BOTS' `sim_village_par` with the manual cut-off: one step of `v`, its
/// children as placed tasks when `depth < CUTOFF`.
fn sim_par(arenas: &[NodeVec<Patient>], places: &[Place], v: &mut Village, depth: u32) {
    if depth >= CUTOFF || v.children.is_empty() {
        sim_seq(arenas, v, depth == 0);
        return;
    }
    terroir::scope(|s| {
        for c in &mut v.children {
            s.spawn_on(&places[c.region], move |_| {
                terroir::label("health-village", || sim_par(arenas, places, c, depth + 1));
            });
        }
        step_own(arenas, &mut v.hosp, depth == 0);
    });
    step_after_children(arenas, v);
}

/// BOTS' `struct Results` (integer counts), summed over the tree.
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Results {
    /// Hospitals (= villages).
    pub hospitals: u64,
    /// Hospital staff.
    pub personnel: u64,
    /// People.
    pub patients: u64,
    /// People at home.
    pub in_village: u64,
    /// People waiting.
    pub waiting: u64,
    /// People in assessment.
    pub assess: u64,
    /// People in treatment.
    pub inside: u64,
    /// Steps spent in hospitals, summed.
    pub time: u64,
    /// Check-ins, summed.
    pub hosps_visited: u64,
}

/// BOTS' `get_results` (children first), and every person's final state
/// appended to `words` in the same order.
fn results(arenas: &[NodeVec<Patient>], v: &Village, res: &mut Results, words: &mut Vec<u64>) {
    for c in &v.children {
        results(arenas, c, res, words);
    }
    res.hospitals += 1;
    res.personnel += 1 << v.level;
    let lists: [(&Vec<PRef>, u64); 4] = [
        (&v.hosp.population, 0),
        (&v.hosp.waiting, 1),
        (&v.hosp.assess, 2),
        (&v.hosp.inside, 3),
    ];
    for (list, tag) in lists {
        let n = list.len() as u64;
        res.patients += n;
        match tag {
            0 => res.in_village += n,
            1 => res.waiting += n,
            2 => res.assess += n,
            _ => res.inside += n,
        }
        for &p in list {
            let r = rec(arenas, p);
            let time = r.time.load(Relaxed) as u32;
            let visits = r.hosps_visited.load(Relaxed) as u32;
            res.time += u64::from(time);
            res.hosps_visited += u64::from(visits);
            words.push(u64::from(r.id) << 2 | tag);
            words.push(r.seed.load(Relaxed) as u32 as u64);
            words.push(u64::from(time) << 32 | u64::from(visits));
            words.push(r.time_left.load(Relaxed) as u32 as u64);
        }
    }
}

/// The summary and the checksum of the final state.
fn summarise(state: &State) -> (Results, u64) {
    let mut res = Results::default();
    let mut words = Vec::new();
    results(&state.arenas, &state.root, &mut res, &mut words);
    let head = [
        res.hospitals,
        res.personnel,
        res.patients,
        res.in_village,
        res.waiting,
        res.assess,
        res.inside,
        res.time,
        res.hosps_visited,
    ];
    (res, checksum(head.into_iter().chain(words)))
}

/// The workload: the parameters and the state `setup` rebuilds.
pub struct Health {
    /// Tree levels (BOTS' `sim_level`).
    levels: u32,
    /// Time steps simulated per run (BOTS' `sim_time`).
    steps: usize,
    /// Nodes regions are dealt to.
    nodes: Vec<NodeId>,
    /// The simulation's state.
    state: Mutex<State>,
}

impl Workload for Health {
    fn name(&self) -> &'static str {
        "health"
    }

    fn describe(&self) -> String {
        let villages: usize = (0..self.levels).map(|l| CITIES.pow(l)).sum();
        format!(
            "{} levels ({villages} villages), {CITIES} children per village, {} steps, \
             cut-off {CUTOFF}",
            self.levels, self.steps
        )
    }

    fn setup(&self) {
        let fresh = build(self.levels, &self.nodes).expect("health: rebuilding the state");
        *self.state.lock().unwrap() = fresh;
    }

    fn sequential(&self) -> u64 {
        let mut state = self.state.lock().unwrap();
        let State { arenas, root } = &mut *state;
        for _ in 0..self.steps {
            sim_seq(arenas, root, true);
        }
        summarise(&state).1
    }

    fn terroir(&self, pool: &ThreadPool) -> u64 {
        let mut state = self.state.lock().unwrap();
        let State { arenas, root } = &mut *state;
        let places: Vec<Place> = arenas.iter().map(Place::data).collect();
        let arenas: &[NodeVec<Patient>] = arenas;
        pool.install(|| {
            for _ in 0..self.steps {
                sim_par(arenas, &places, root, 0);
            }
        });
        summarise(&state).1
    }
}

/// BOTS' summary after running `levels` levels for [`STEPS`] steps
/// sequentially: at 4 levels, BOTS' `small.input` check values.
///
/// # Errors
/// As [`new`].
pub fn bots_summary(levels: u32, topology: &Topology) -> Result<Results, String> {
    let nodes: Vec<NodeId> = topology.nodes().iter().map(|n| n.id()).collect();
    let mut state = build(levels, &nodes)?;
    for _ in 0..STEPS {
        sim_seq(&state.arenas, &mut state.root, true);
    }
    Ok(summarise(&state).0)
}

/// Builds the workload: the parameter is the number of levels (1..=5).
pub fn new(size: Size, topology: &Topology) -> Result<Box<dyn Workload>, String> {
    let levels = size.pick(2, 4, 5);
    if !(1..=MAX_LEVELS).contains(&levels) {
        return Err(format!(
            "health: levels must be 1..={MAX_LEVELS}, not {levels}"
        ));
    }
    let nodes: Vec<NodeId> = topology.nodes().iter().map(|n| n.id()).collect();
    let state = build(levels as u32, &nodes)?;
    let steps = if size == Size::Large {
        LARGE_STEPS
    } else {
        STEPS
    };
    Ok(Box::new(Health {
        levels: levels as u32,
        steps,
        nodes,
        state: Mutex::new(state),
    }))
}
