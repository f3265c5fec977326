//! GET /dashboard/...: the operator's page, from the Worker's static files
//! (producer/static/dashboard, see crate::static_files). The page holds no data and no secret:
//! it asks for an admin token, keeps it in sessionStorage, and reads everything through the
//! admin API, which checks the token on every call. Served with a strict CSP and never framed.

use jobs_shared::request::api_error::ApiError;
use worker::{Env, Response};

use crate::static_files;

/// The files the page is made of; anything else under /dashboard is a 404.
const FILES: [(&str, &str); 4] = [
    ("index.html", "text/html; charset=utf-8"),
    ("app.js", "text/javascript; charset=utf-8"),
    ("charts.js", "text/javascript; charset=utf-8"),
    ("style.css", "text/css; charset=utf-8"),
];

/// GET /dashboard/{file}; `file` is empty for the page itself (/dashboard/).
pub async fn get(env: &Env, file: &str) -> Result<Response, ApiError> {
    let name = match file {
        "" => "index.html",
        other => other,
    };
    let (file, content_type) = FILES.iter().find(|(f, _)| *f == name).ok_or_else(|| {
        ApiError::new(404, "not_found", format!("no route for /dashboard/{name}"))
    })?;
    static_files::serve(
        env,
        &format!("dashboard/{file}"),
        &[
            ("content-type", content_type),
            (
                "content-security-policy",
                "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                 img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            ),
            ("referrer-policy", "no-referrer"),
            ("cache-control", "no-cache"),
        ],
    )
    .await
}
