//! Every HTTP route of the producer, one row each: method, path pattern, who may call it, and
//! the handler. The one place a route is added; producer/static/openapi.json documents the same
//! rows (the test below holds the two together). Matching is path first, then method (shared
//! `route`), so a known path answers a method it lacks with 405 and its `Allow` methods.

use jobs_shared::api::route::{Method, Route};

use crate::admin::job_actions::Move;
use crate::admin::{
    audit, budgets, dead_letters, history, job_actions, jobs, pauses, rss_sources, schedules,
    stats, types,
};
use crate::artifact_download::ArtifactPath;
use crate::router::{Access, Target};
use crate::{
    artifact_download, dashboard, enqueue, events, health, job_cancel, job_view, metrics, openapi,
};

/// `Method "pattern", access => |call| handler(...)`: the handler's future, awaited.
macro_rules! routes {
    ($($method:ident $pattern:literal, $access:ident => |$call:ident| $handler:expr;)*) => {
        &[$(Route {
            pattern: $pattern,
            method: Method::$method,
            target: Target {
                access: Access::$access,
                handler: |$call| Box::pin(async move { $handler.await }),
            },
        }),*]
    };
}

pub static ROUTES: &[Route<Target>] = routes![
    Get "/healthz", Public => |c| health::get(c.env);
    Get "/openapi.json", Public => |c| openapi::get(c.env);
    Get "/metrics", Metrics => |c| metrics::get(c.env);
    Get "/dashboard", Public => |c| dashboard::get(c.env, "");
    Get "/dashboard/{file}", Public => |c| dashboard::get(c.env, c.param("file"));

    Post "/v1/jobs", Enqueue => |c| enqueue::one(c.host(), c.caller(), c.req);
    Post "/v1/jobs/batch", Enqueue => |c| enqueue::batch(c.host(), c.caller(), c.req);
    Get "/v1/jobs/{id}", Enqueue => |c| job_view::get(c.env, c.param("id"), &c.caller());
    Post "/v1/jobs/{id}/cancel", Enqueue =>
        |c| job_cancel::post(c.env, &c.caller(), c.req, c.param("id"));
    Post "/v1/events", Enqueue => |c| events::post(c.env, &c.caller(), c.req);
    Get "/v1/jobs/{id}/artifacts/{run}/{kind}", Enqueue => |c| artifact_download::get(c.env, &c.caller(),
        ArtifactPath { id: c.param("id"), run: c.param("run"), kind: c.param("kind") });

    Get "/v1/admin/stats", Admin => |c| stats::get(&c.admin());
    Get "/v1/admin/history", Admin => |c| history::get(c.req, c.env);
    Get "/v1/admin/jobs", Admin => |c| jobs::list(c.req, c.env);
    Post "/v1/admin/jobs/retry", Admin =>
        |c| job_actions::bulk(&c.admin(), c.req, Move::retry("jobs.retry"));
    Post "/v1/admin/jobs/cancel", Admin =>
        |c| job_actions::bulk(&c.admin(), c.req, Move::cancel("jobs.cancel"));
    Post "/v1/admin/jobs/status", Admin => |c| job_actions::bulk_set_status(&c.admin(), c.req);
    Get "/v1/admin/jobs/{id}", Admin =>
        |c| job_view::get_for_operator(c.env, c.param("id"), &c.caller());
    Post "/v1/admin/jobs/{id}/status", Admin =>
        |c| job_actions::set_status(&c.admin(), c.req, c.param("id"));
    Post "/v1/admin/jobs/{id}/priority", Admin =>
        |c| job_actions::priority(&c.admin(), c.req, c.param("id"));
    Post "/v1/admin/jobs/{id}/boost", Admin =>
        |c| job_actions::boost(&c.admin(), c.req, c.param("id"));
    Post "/v1/admin/jobs/{id}/retry", Admin =>
        |c| job_actions::move_one(&c.admin(), c.req, c.param("id"), Move::retry("job.retry"));
    Post "/v1/admin/jobs/{id}/cancel", Admin =>
        |c| job_actions::move_one(&c.admin(), c.req, c.param("id"), Move::cancel("job.cancel"));
    Get "/v1/admin/failures", Admin => |c| jobs::failures(c.req, c.env);
    Get "/v1/admin/dead-letters", Admin => |c| dead_letters::list(c.req, c.env);
    Post "/v1/admin/dead-letters/replay", Admin => |c| dead_letters::replay(&c.admin(), c.req);
    Post "/v1/admin/dead-letters/{id}/replay", Admin =>
        |c| dead_letters::replay_one(&c.admin(), c.req, c.param("id"));
    Get "/v1/admin/pauses", Admin => |c| pauses::list(&c.admin());
    Post "/v1/admin/pauses", Admin => |c| pauses::pause(&c.admin(), c.req);
    Delete "/v1/admin/pauses/{kind}/{name}", Admin =>
        |c| pauses::resume(&c.admin(), c.param("kind"), c.param("name"));
    Get "/v1/admin/audit", Admin => |c| audit::list(c.req, c.env);

    Get "/v1/admin/schedules", Admin => |c| schedules::list(c.req, c.env);
    Post "/v1/admin/schedules", Admin => |c| schedules::create(&c.admin(), c.req);
    Get "/v1/admin/schedules/{id}", Admin => |c| schedules::get(c.env, c.param("id"));
    Put "/v1/admin/schedules/{id}", Admin =>
        |c| schedules::replace(&c.admin(), c.req, c.param("id"), false);
    Patch "/v1/admin/schedules/{id}", Admin =>
        |c| schedules::replace(&c.admin(), c.req, c.param("id"), true);
    Delete "/v1/admin/schedules/{id}", Admin =>
        |c| schedules::delete(&c.admin(), c.param("id"));
    Post "/v1/admin/schedules/{id}/toggle", Admin =>
        |c| schedules::toggle(&c.admin(), c.req, c.param("id"));

    Get "/v1/admin/budgets", Admin => |c| budgets::list(c.req, c.env);
    Get "/v1/admin/budgets/{type}", Admin => |c| budgets::status(c.req, c.env, c.param("type"));
    Patch "/v1/admin/budgets/{type}", Admin =>
        |c| budgets::set_limit(&c.admin(), c.req, c.param("type"));
    Get "/v1/admin/budgets/{type}/history", Admin =>
        |c| budgets::history(c.req, c.env, c.param("type"));

    Get "/v1/admin/types", Admin => |c| types::list(c.env);
    Get "/v1/admin/types/{name}", Admin => |c| types::get(c.env, c.param("name"));
    Put "/v1/admin/types/{name}", Admin => |c| types::put(&c.admin(), c.req, c.param("name"));
    Delete "/v1/admin/types/{name}", Admin => |c| types::delete(&c.admin(), c.param("name"));
    Get "/v1/admin/types/{name}/flow", Admin => |c| types::flow(c.req, c.env, c.param("name"));

    Get "/v1/admin/rss-sources", Admin => |c| rss_sources::list(c.env);
    Post "/v1/admin/rss-sources", Admin => |c| rss_sources::add(&c.admin(), c.req);
    Patch "/v1/admin/rss-sources/{id}", Admin =>
        |c| rss_sources::set_active(&c.admin(), c.req, c.param("id"));
];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use jobs_shared::api::route::shadowed;
    use serde_json::Value;

    use super::ROUTES;
    use crate::router::Access;

    /// Who may call an operation, as the document's `security` says it.
    fn access_of(security: &Value) -> Access {
        let mut schemes: Vec<&str> = security
            .as_array()
            .expect("every operation states its security")
            .iter()
            .flat_map(|s| s.as_object().expect("a requirement").keys())
            .map(String::as_str)
            .collect();
        schemes.sort_unstable();
        match schemes.as_slice() {
            [] => Access::Public,
            ["adminToken", "enqueueToken"] => Access::Enqueue,
            ["adminToken"] => Access::Admin,
            ["adminToken", "metricsToken"] => Access::Metrics,
            other => panic!("no access means {other:?}"),
        }
    }

    #[test]
    fn the_openapi_document_has_every_route_with_its_access_and_no_other() {
        let doc: Value = serde_json::from_str(include_str!("../static/openapi.json")).unwrap();
        let documented: BTreeSet<String> = doc["paths"]
            .as_object()
            .unwrap()
            .iter()
            .flat_map(|(path, operations)| {
                operations
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(move |(method, op)| {
                        let access = access_of(&op["security"]);
                        let path = path.trim_end_matches('/');
                        format!("{} {path} {access:?}", method.to_uppercase())
                    })
            })
            .collect();
        let routed: BTreeSet<String> = ROUTES
            .iter()
            .map(|r| format!("{} {} {:?}", r.method.as_str(), r.pattern, r.target.access))
            .collect();
        let undocumented: Vec<_> = routed.difference(&documented).collect();
        let unrouted: Vec<_> = documented.difference(&routed).collect();
        assert!(
            undocumented.is_empty(),
            "not in openapi.json: {undocumented:?}"
        );
        assert!(
            unrouted.is_empty(),
            "in openapi.json, not routed: {unrouted:?}"
        );
    }

    #[test]
    fn every_row_can_answer() {
        assert_eq!(shadowed(ROUTES), Vec::<String>::new());
    }
}
