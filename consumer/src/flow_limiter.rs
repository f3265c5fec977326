//! The Durable Object that holds one type and key's flow-control counts
//! (jobs_shared::job::flow_control): one instance per `<type>/<key>` (`idFromName`), so a key's
//! slots are counted in one place, strongly consistent, whichever consumer asks; keys never
//! contend with each other. Its state is stored after every change, and the runtime's output
//! gate holds each answer until the write is durable, so a restart of the object loses nothing
//! but its copy in memory (docs/guarantees.md "Guarantees and how they hold").
//!
//! `POST` a `FlowRequest`: its releases, then a `Slot` per wanted job. `GET`: its `FlowCounts`
//! (running and waiting now), for the operator's view of the key.

use std::cell::RefCell;

use jobs_shared::job::flow_control::{FlowRequest, FlowState};
use worker::{durable_object, Date, DurableObject, Env, Method, Request, Response, Result, State};

/// The storage key of the one value the object keeps.
const STATE_KEY: &str = "flow";

#[durable_object]
pub struct FlowLimiter {
    state: State,
    counts: RefCell<Option<FlowState>>,
}

impl DurableObject for FlowLimiter {
    fn new(state: State, _env: Env) -> Self {
        FlowLimiter {
            state,
            counts: RefCell::new(None),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let storage = self.state.storage();
        if self.counts.borrow().is_none() {
            let stored: Option<FlowState> = storage.get(STATE_KEY).await?;
            self.counts.replace(Some(stored.unwrap_or_default()));
        }
        let now_ms = Date::now().as_millis() as i64;
        if req.method() == Method::Get {
            let counts = self.counts.borrow().as_ref().map(|c| c.counts(now_ms));
            return Response::from_json(&counts.unwrap_or_default());
        }
        let ask: FlowRequest = req.json().await?;
        let (slots, snapshot) = {
            let mut counts = self.counts.borrow_mut();
            let counts = counts.get_or_insert_with(FlowState::default);
            (counts.serve(&ask, now_ms), counts.clone())
        };
        storage.put(STATE_KEY, &snapshot).await?;
        Response::from_json(&slots)
    }
}
