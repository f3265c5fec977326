//! Group commit for enqueue (docs/app-guide.md "Enqueue, grouped"): while one enqueue write of this
//! isolate is in flight (its D1 batch; its messages are sent while the next one writes), the
//! requests that arrive wait in line, and the next write takes them together: one D1 batch and one
//! sendBatch per lane for all of them, as a database's group commit shares one log flush. A
//! request that finds no write in flight is written at once; nobody waits on a timer for
//! company. Each job keeps its own request's correlation id and caller.

use jobs_shared::runtime::faults;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use jobs_shared::job::enqueue::NewJob;
use jobs_shared::job::enqueue::{MAX_BATCH, MAX_STORED_BYTES};
use jobs_shared::observe::d1_stats::D1Stats;
use jobs_shared::request::api_error::ApiError;
use jobs_shared::runtime::queue_send::Outgoing;
use jobs_store::jobs::{self, Written};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use worker::js_sys::{Array, Function, Promise};
use worker::wasm_bindgen_futures::JsFuture;
use worker::{Context, Env};

use crate::admin::d1;
use crate::dispatch;
use crate::env_config::now_ms;

/// What a request's write did: each of its jobs' [`Written`], and the write that carried it.
pub type Answer = Result<(Vec<Written>, GroupWrite), ApiError>;

/// The write that carried a request: its D1 work, and how many requests and jobs shared it.
#[derive(Clone, Copy)]
pub struct GroupWrite {
    pub stats: D1Stats,
    pub requests: usize,
    pub jobs: usize,
}

impl GroupWrite {
    /// A `Server-Timing` entry after the `d1` one (whose work it is), with the request's own
    /// share: `write;desc="requests=3 jobs=5 own_jobs=1"`.
    pub fn server_timing(&self, own_jobs: usize) -> String {
        format!(
            "{}, write;desc=\"requests={} jobs={} own_jobs={own_jobs}\"",
            self.stats.server_timing(),
            self.requests,
            self.jobs
        )
    }
}

/// A waiting request wakes at least this often: the runtime cancels, as hung, a request that
/// waits on nothing of its own (here: another request's write). A request due to start the
/// next write whose client has left is replaced within this time by another waiting, or else
/// by the next to arrive.
const KEEPALIVE_MS: u32 = 250;

/// A write in flight this long is given up on: its requests answer 503 (their jobs may or may
/// not be written, as when D1 times out) and the line moves on. A request waits in line no
/// longer either: it answers 503 and leaves, and one still in line after that has no one
/// waiting for it (its client left) and is dropped unwritten. Within the 30 s a `waitUntil`
/// task may run after its request ends.
const WRITE_GIVEN_UP_MS: i64 = 25_000;

/// One request's place in line: its jobs, their rows (`jobs::rows_json`), and its answer.
pub struct Entry {
    pub jobs: Vec<NewJob>,
    rows: String,
    arrived_ms: i64,
    correlation_id: String,
    answer: RefCell<Option<Answer>>,
    /// Resolves the promise the request waits on: a promise resolved from another request's
    /// context resumes its waiter in the waiter's own context.
    wake: RefCell<Option<Function>>,
}

impl Entry {
    fn wake(&self) {
        if let Some(resolve) = self.wake.borrow_mut().take() {
            let _ = resolve.call0(&JsValue::UNDEFINED);
        }
    }
}

/// The isolate's line: the requests waiting, and the write in flight (its number and since
/// when), numbered so that a write given up on cannot end the one after it.
#[derive(Default)]
struct Line {
    waiting: VecDeque<Rc<Entry>>,
    writing: Option<(u64, i64)>,
    writes: u64,
}

impl Line {
    /// Starts a write of the head of the line when none is in flight (or the one in flight was
    /// given up on): the longest head within one D1 batch's bounds, at most [`MAX_BATCH`] jobs
    /// and [`MAX_STORED_BYTES`] of rows, and at least one request.
    fn start_write(&mut self, now: i64) -> Option<(u64, Vec<Rc<Entry>>)> {
        let in_flight = self
            .writing
            .is_some_and(|(_, since)| now - since < WRITE_GIVEN_UP_MS);
        if in_flight {
            return None;
        }
        self.waiting
            .retain(|entry| now - entry.arrived_ms <= WRITE_GIVEN_UP_MS);
        if self.waiting.is_empty() {
            return None;
        }
        let (mut jobs, mut bytes) = (0, 0);
        let taken = self
            .waiting
            .iter()
            .take_while(|entry| {
                jobs += entry.jobs.len();
                bytes += entry.rows.len();
                jobs <= MAX_BATCH && bytes <= MAX_STORED_BYTES
            })
            .count()
            .max(1);
        self.writes += 1;
        self.writing = Some((self.writes, now));
        Some((self.writes, self.waiting.drain(..taken).collect()))
    }

    /// Ends write `number` if it is the one in flight; returns the request that now heads the
    /// line, to wake (it starts the next write).
    fn end_write(&mut self, number: u64) -> Option<Rc<Entry>> {
        if self.writing.is_some_and(|(n, _)| n == number) {
            self.writing = None;
        }
        self.waiting.front().cloned()
    }

    /// Takes `entry` out of line, if no write has it yet.
    fn leave(&mut self, entry: &Rc<Entry>) {
        self.waiting.retain(|e| !Rc::ptr_eq(e, entry));
    }
}

thread_local! {
    static LINE: RefCell<Line> = RefCell::default();
}

/// Writes `jobs` (their `rows` already within bounds) in this isolate's next write, sends the
/// new ones, and returns the entry (its jobs) with what was written. The write runs as a
/// `waitUntil` task of the request that starts it, so a client that leaves cancels nobody's.
/// A request of [`MAX_BATCH`] jobs fills a write alone and is written at once, in its own
/// request, beside any write in flight.
pub async fn write(
    ctx: &Context,
    env: &Env,
    jobs: Vec<NewJob>,
    rows: String,
    correlation_id: &str,
) -> (Rc<Entry>, Answer) {
    let entry = Rc::new(Entry {
        jobs,
        rows,
        arrived_ms: now_ms(),
        correlation_id: correlation_id.to_string(),
        answer: RefCell::new(None),
        wake: RefCell::new(None),
    });
    if entry.jobs.len() >= MAX_BATCH {
        // It fills a write alone: nothing to share, so it does not wait for the one in flight.
        let group = std::slice::from_ref(&entry);
        let mut answers = send_new(env, group, insert(env, group).await).await;
        return (entry, answers.remove(0));
    }
    LINE.with(|line| line.borrow_mut().waiting.push_back(entry.clone()));
    loop {
        if let Some((number, group)) = LINE.with(|line| line.borrow_mut().start_write(now_ms())) {
            ctx.wait_until(write_group(env.clone(), number, group));
        }
        if let Some(answer) = entry.answer.borrow_mut().take() {
            return (entry.clone(), answer);
        }
        if now_ms() - entry.arrived_ms > WRITE_GIVEN_UP_MS {
            LINE.with(|line| line.borrow_mut().leave(&entry));
            return (entry.clone(), Err(given_up()));
        }
        wait_for_turn(&entry).await;
    }
}

/// Until `entry` is woken (answered, or heading the line) or the keepalive passes.
async fn wait_for_turn(entry: &Entry) {
    let turn = wait_turn(KEEPALIVE_MS);
    *entry.wake.borrow_mut() = turn.get(1).dyn_into().ok();
    let _ = JsFuture::from(Promise::from(turn.get(0))).await;
}

#[wasm_bindgen(module = "/src/turn.js")]
extern "C" {
    /// `[promise, resolve]`: the promise resolves when `resolve` is called or after `ms`.
    #[wasm_bindgen(js_name = waitTurn)]
    fn wait_turn(ms: u32) -> Array;
}

/// Writes `group`, wakes the next in line as soon as D1 has answered (it writes while this
/// group's messages are sent), then sends this group's new jobs and answers its requests.
async fn write_group(env: Env, number: u64, group: Vec<Rc<Entry>>) {
    let inserted = insert(&env, &group).await;
    if let Some(next) = LINE.with(|line| line.borrow_mut().end_write(number)) {
        next.wake();
    }
    let answers = send_new(&env, &group, inserted).await;
    for (entry, answer) in group.iter().zip(answers) {
        *entry.answer.borrow_mut() = Some(answer);
        entry.wake();
    }
}

/// What one D1 batch wrote for a group: each entry's jobs' [`Written`], and the write.
type Inserted = Result<(Vec<Vec<Written>>, GroupWrite), ApiError>;

/// One D1 batch for every job of the group, in line order (so of two live jobs with one dedup
/// key the earlier request's is written).
async fn insert(env: &Env, group: &[Rc<Entry>]) -> Inserted {
    let jobs: Vec<&NewJob> = group.iter().flat_map(|e| e.jobs.iter()).collect();
    let rows = jobs::joined_rows(group.iter().map(|e| e.rows.as_str()));
    let db = d1::database(env)?;
    let (written, stats) = jobs::job_insert_many(&db, &jobs, &rows).await?;
    let write = GroupWrite {
        stats,
        requests: group.len(),
        jobs: jobs.len(),
    };
    let mut written = written.into_iter();
    let per_entry = group
        .iter()
        .map(|e| written.by_ref().take(e.jobs.len()).collect())
        .collect();
    Ok((per_entry, write))
}

/// Sends the messages of the group's new jobs (a failed send leaves them in the outbox); one
/// answer per entry.
async fn send_new(env: &Env, group: &[Rc<Entry>], inserted: Inserted) -> Vec<Answer> {
    let (written, write) = match inserted {
        Ok(inserted) => inserted,
        Err(e) => return group.iter().map(|_| Err(e.clone())).collect(),
    };
    let outgoing: Vec<Outgoing> = group
        .iter()
        .zip(&written)
        .flat_map(|(entry, written)| {
            entry
                .jobs
                .iter()
                .zip(written)
                .filter(|(_, w)| !w.deduplicated)
                .filter_map(|(job, _)| Outgoing::new_job(job, &entry.correlation_id))
        })
        .collect();
    dispatch::send_all(env, &outgoing).await;
    written.into_iter().map(|w| Ok((w, write))).collect()
}

fn given_up() -> ApiError {
    faults::internal(&"an enqueue write in flight for too long; its jobs may or may not be written")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(jobs: usize, rows: usize) -> Rc<Entry> {
        entry_at(jobs, rows, 0)
    }

    fn entry_at(jobs: usize, rows: usize, arrived_ms: i64) -> Rc<Entry> {
        let job = jobs_shared::job::enqueue::validate_enqueue(
            &serde_json::json!({"type": "noop", "payload": {}}),
            "01J00000000000000000000000".into(),
            0,
            jobs_shared::retry::retry_policy::QueueDelayLimit::DEFAULT,
        )
        .unwrap();
        Rc::new(Entry {
            jobs: vec![job; jobs],
            rows: "x".repeat(rows),
            arrived_ms,
            correlation_id: String::new(),
            answer: RefCell::new(None),
            wake: RefCell::new(None),
        })
    }

    fn line(entries: &[Rc<Entry>]) -> Line {
        Line {
            waiting: entries.iter().cloned().collect(),
            ..Line::default()
        }
    }

    /// How many requests the write started now takes, if one starts.
    fn started(l: &mut Line, now: i64) -> Option<usize> {
        l.start_write(now).map(|(_, group)| group.len())
    }

    #[test]
    fn a_write_takes_the_longest_head_within_one_batch() {
        let mut l = line(&[entry(1, 10), entry(60, 10), entry(39, 10), entry(1, 10)]);
        assert_eq!(started(&mut l, 0), Some(3));
        assert_eq!(l.waiting.len(), 1);
        let mut l = line(&[entry(1, MAX_STORED_BYTES - 5), entry(1, 10)]);
        assert_eq!(started(&mut l, 0), Some(1));
    }

    #[test]
    fn one_write_at_a_time_until_it_ends_or_is_given_up_on() {
        let mut l = line(&[entry(1, 10)]);
        let (first, _) = l.start_write(0).unwrap();
        let next = entry(1, 10);
        l.waiting.push_back(next.clone());
        assert_eq!(started(&mut l, WRITE_GIVEN_UP_MS - 1), None);
        assert!(Rc::ptr_eq(&l.end_write(first).unwrap(), &next));
        let (second, _) = l.start_write(WRITE_GIVEN_UP_MS).unwrap();
        l.waiting.push_back(entry_at(1, 10, WRITE_GIVEN_UP_MS + 5));
        assert_eq!(started(&mut l, WRITE_GIVEN_UP_MS + 1), None);
        // A write given up on that ends late does not end the one in flight after it.
        l.end_write(first);
        assert_eq!(started(&mut l, WRITE_GIVEN_UP_MS + 2), None);
        l.end_write(second);
        assert_eq!(started(&mut l, WRITE_GIVEN_UP_MS + 3), Some(1));
        l.waiting.push_back(entry_at(1, 10, 3 * WRITE_GIVEN_UP_MS));
        assert_eq!(
            started(&mut l, 3 * WRITE_GIVEN_UP_MS),
            Some(1),
            "the one in flight given up"
        );
        assert_eq!(started(&mut line(&[]), 0), None);
    }

    #[test]
    fn a_request_in_line_past_the_bound_is_dropped_unwritten() {
        let fresh = entry_at(1, 10, 30_000);
        let mut l = line(&[entry_at(1, 10, 0), fresh.clone()]);
        let (_, group) = l.start_write(WRITE_GIVEN_UP_MS + 1).unwrap();
        assert_eq!(group.len(), 1);
        assert!(Rc::ptr_eq(&group[0], &fresh));
        assert_eq!(
            started(&mut line(&[entry_at(1, 10, 0)]), WRITE_GIVEN_UP_MS + 1),
            None
        );
    }

    #[test]
    fn leaving_the_line_is_only_for_a_request_no_write_has() {
        let (a, b) = (entry(1, 10), entry(1, 10));
        let mut l = line(&[a.clone(), b.clone()]);
        l.leave(&b);
        assert_eq!(l.waiting.len(), 1);
        let (_, group) = l.start_write(0).unwrap();
        assert!(Rc::ptr_eq(&group[0], &a));
        l.leave(&a);
        assert_eq!(group.len(), 1, "a write keeps what it took");
    }
}
