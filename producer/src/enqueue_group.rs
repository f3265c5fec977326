//! Group commit for enqueue (README "Enqueue, grouped"): while one enqueue write of this isolate
//! is in flight, the requests that arrive wait in line, and the next write takes them together:
//! one D1 batch and one sendBatch per lane for all of them, as a database's group commit shares
//! one log flush. A request that finds no write in flight is written at once; nobody waits on a
//! timer for company. Each job keeps its own request's correlation id and caller.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use jobs_shared::job::enqueue::{MAX_BATCH, MAX_STORED_BYTES};
use jobs_shared::util::queue_send::Outgoing;
use jobs_shared::{ApiError, D1Stats, NewJob};
use jobs_store::jobs::{self, Written};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use worker::js_sys::{Array, Function, Promise};
use worker::wasm_bindgen_futures::JsFuture;
use worker::{Context, Env};

use crate::admin::d1;
use crate::env_config::now_ms;
use crate::{dispatch, respond};

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
/// waits on nothing of its own (here: another request's write), and a request that should lead
/// the next write but whose client left is replaced by the next in line within this time.
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

/// The isolate's line: the requests waiting, and since when a write is in flight.
#[derive(Default)]
struct Line {
    waiting: VecDeque<Rc<Entry>>,
    writing_since: Option<i64>,
}

impl Line {
    /// Starts a write of the head of the line when none is in flight (or the one in flight was
    /// given up on): the longest head within one D1 batch's bounds, at most [`MAX_BATCH`] jobs
    /// and [`MAX_STORED_BYTES`] of rows, and at least one request.
    fn start_write(&mut self, now: i64) -> Option<Vec<Rc<Entry>>> {
        let in_flight = self
            .writing_since
            .is_some_and(|since| now - since < WRITE_GIVEN_UP_MS);
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
        self.writing_since = Some(now);
        Some(self.waiting.drain(..taken).collect())
    }

    /// Ends the write in flight; returns the request that now heads the line, to wake (it
    /// starts the next write).
    fn end_write(&mut self) -> Option<Rc<Entry>> {
        self.writing_since = None;
        self.waiting.front().cloned()
    }

    /// Takes `entry` out of line; false when a write has it already.
    fn leave(&mut self, entry: &Rc<Entry>) -> bool {
        let before = self.waiting.len();
        self.waiting.retain(|e| !Rc::ptr_eq(e, entry));
        self.waiting.len() < before
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
        let answer = write_and_send(env, std::slice::from_ref(&entry))
            .await
            .pop();
        return (entry, answer.unwrap_or_else(|| Err(given_up())));
    }
    LINE.with(|line| line.borrow_mut().waiting.push_back(entry.clone()));
    loop {
        if let Some(group) = LINE.with(|line| line.borrow_mut().start_write(now_ms())) {
            ctx.wait_until(write_group(env.clone(), group));
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

/// Writes `group` and sends its new jobs, answers each of its requests, and wakes the next in
/// line.
async fn write_group(env: Env, group: Vec<Rc<Entry>>) {
    let answers = write_and_send(&env, &group).await;
    for (entry, answer) in group.iter().zip(answers) {
        *entry.answer.borrow_mut() = Some(answer);
        entry.wake();
    }
    if let Some(next) = LINE.with(|line| line.borrow_mut().end_write()) {
        next.wake();
    }
}

/// One D1 batch for every job of the group (in line order, so of two live jobs with one dedup
/// key the earlier request's is written), then their messages; one answer per entry.
async fn write_and_send(env: &Env, group: &[Rc<Entry>]) -> Vec<Answer> {
    let jobs: Vec<&NewJob> = group.iter().flat_map(|e| e.jobs.iter()).collect();
    let rows = jobs::joined_rows(group.iter().map(|e| e.rows.as_str()));
    let written = match d1::database(env) {
        Ok(db) => jobs::job_insert_many(&db, &jobs, &rows)
            .await
            .map_err(|e| respond::internal(&e)),
        Err(e) => Err(e),
    };
    let (written, stats) = match written {
        Ok(written) => written,
        Err(e) => return group.iter().map(|_| Err(e.clone())).collect(),
    };
    let write = GroupWrite {
        stats,
        requests: group.len(),
        jobs: jobs.len(),
    };
    let mut written = written.into_iter();
    let answers: Vec<Vec<Written>> = group
        .iter()
        .map(|e| written.by_ref().take(e.jobs.len()).collect())
        .collect();
    let outgoing: Vec<Outgoing> = group
        .iter()
        .zip(&answers)
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
    answers.into_iter().map(|w| Ok((w, write))).collect()
}

fn given_up() -> ApiError {
    respond::internal(
        &"an enqueue write in flight for too long; its jobs may or may not be written",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(jobs: usize, rows: usize) -> Rc<Entry> {
        entry_at(jobs, rows, 0)
    }

    fn entry_at(jobs: usize, rows: usize, arrived_ms: i64) -> Rc<Entry> {
        let job = jobs_shared::validate_enqueue(
            &serde_json::json!({"type": "noop", "payload": {}}),
            "01J00000000000000000000000".into(),
            0,
            jobs_shared::QueueDelayLimit::DEFAULT,
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
            writing_since: None,
        }
    }

    #[test]
    fn a_write_takes_the_longest_head_within_one_batch() {
        let mut l = line(&[entry(1, 10), entry(60, 10), entry(39, 10), entry(1, 10)]);
        assert_eq!(l.start_write(0).map(|g| g.len()), Some(3));
        assert_eq!(l.waiting.len(), 1);
        let mut l = line(&[entry(1, MAX_STORED_BYTES - 5), entry(1, 10)]);
        assert_eq!(l.start_write(0).map(|g| g.len()), Some(1));
    }

    #[test]
    fn one_write_at_a_time_until_it_ends_or_is_given_up_on() {
        let mut l = line(&[entry(1, 10)]);
        assert!(l.start_write(0).is_some());
        let next = entry(1, 10);
        l.waiting.push_back(next.clone());
        assert!(l.start_write(WRITE_GIVEN_UP_MS - 1).is_none());
        assert!(Rc::ptr_eq(&l.end_write().unwrap(), &next));
        assert_eq!(l.start_write(WRITE_GIVEN_UP_MS).map(|g| g.len()), Some(1));
        l.waiting.push_back(entry_at(1, 10, WRITE_GIVEN_UP_MS + 5));
        assert!(
            l.start_write(2 * WRITE_GIVEN_UP_MS).is_some(),
            "the one in flight given up"
        );
        assert!(line(&[]).start_write(0).is_none());
    }

    #[test]
    fn a_request_in_line_past_the_bound_is_dropped_unwritten() {
        let fresh = entry_at(1, 10, 30_000);
        let mut l = line(&[entry_at(1, 10, 0), fresh.clone()]);
        let group = l.start_write(WRITE_GIVEN_UP_MS + 1).unwrap();
        assert_eq!(group.len(), 1);
        assert!(Rc::ptr_eq(&group[0], &fresh));
        assert!(line(&[entry_at(1, 10, 0)])
            .start_write(WRITE_GIVEN_UP_MS + 1)
            .is_none());
    }

    #[test]
    fn leaving_the_line_is_only_for_a_request_no_write_has() {
        let (a, b) = (entry(1, 10), entry(1, 10));
        let mut l = line(&[a.clone(), b.clone()]);
        assert!(l.leave(&b));
        let group = l.start_write(0).unwrap();
        assert!(Rc::ptr_eq(&group[0], &a));
        assert!(!l.leave(&a));
    }
}
