//! Path-first matching for the producer's route table (producer/src/routes.rs): a request's path
//! picks one pattern, then its method picks the row, so a known path with a method it lacks is a
//! 405 naming the methods it has (the `Allow` header), and only an unknown path is a 404.
//! Patterns are `/`-separated segments, each literal or a `{name}` that captures one segment.

use std::cmp::Ordering;

/// The methods the API's routes use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl Method {
    pub const fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }
}

/// One row of a route table: what answers `method` on paths of `pattern`.
#[derive(Debug)]
pub struct Route<T> {
    pub pattern: &'static str,
    pub method: Method,
    pub target: T,
}

/// The segments a pattern's `{name}`s captured from a path.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Params<'p>(Vec<(&'static str, &'p str)>);

impl<'p> Params<'p> {
    /// The segment `{name}` captured; a name the pattern lacks reads as empty (no such id).
    pub fn get(&self, name: &str) -> &'p str {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, value)| value)
    }
}

/// What a table answers for a method and a path.
#[derive(Debug)]
pub enum Match<'t, 'p, T> {
    Found {
        route: &'t Route<T>,
        params: Params<'p>,
    },
    /// The path is known; `allow` lists its methods, as an `Allow` header value.
    MethodNotAllowed {
        allow: String,
    },
    NotFound,
}

/// The row of `table` for `method` (as HTTP spells it: "GET") on `path`. Of the patterns that
/// fit the path the most specific one is its route, a literal segment beating a `{name}` (so
/// `/v1/jobs/batch` is not `/v1/jobs/{id}`); the path's rows then differ only by method.
pub fn lookup<'t, 'p, T>(table: &'t [Route<T>], method: &str, path: &'p str) -> Match<'t, 'p, T> {
    let path: Vec<&str> = segments(path).collect();
    let best = table
        .iter()
        .filter(|r| fits(r.pattern, &path))
        .reduce(|best, r| match specificity(r.pattern, best.pattern) {
            Ordering::Greater => r,
            _ => best,
        });
    let Some(best) = best else {
        return Match::NotFound;
    };
    let rows = || table.iter().filter(|r| same_path(r.pattern, best.pattern));
    match rows().find(|r| r.method.as_str() == method) {
        Some(route) => Match::Found {
            route,
            params: Params(
                segments(route.pattern)
                    .zip(&path)
                    .filter_map(|(s, value)| param_name(s).map(|name| (name, *value)))
                    .collect(),
            ),
        },
        None => {
            let mut methods: Vec<Method> = rows().map(|r| r.method).collect();
            methods.sort();
            methods.dedup();
            let allow: Vec<&str> = methods.into_iter().map(Method::as_str).collect();
            Match::MethodNotAllowed {
                allow: allow.join(", "),
            }
        }
    }
}

/// Rows of `table` that can never answer, because an earlier row has the same path and method:
/// each as "METHOD pattern".
pub fn shadowed<T>(table: &[Route<T>]) -> Vec<String> {
    table
        .iter()
        .enumerate()
        .filter(|(i, r)| {
            table[..*i]
                .iter()
                .any(|earlier| earlier.method == r.method && same_path(earlier.pattern, r.pattern))
        })
        .map(|(_, r)| format!("{} {}", r.method.as_str(), r.pattern))
        .collect()
}

/// The path of a request URL as the runtime serializes it (WHATWG): after `scheme://host`, up
/// to the query or fragment. Such a URL never has an empty path, and `?` and `#` inside the path
/// are always percent-encoded, so no parser is needed.
pub fn path_of_url(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let Some(start) = url[after_scheme..].find('/').map(|i| after_scheme + i) else {
        return "/";
    };
    let path = &url[start..];
    path.find(['?', '#']).map_or(path, |end| &path[..end])
}

/// The query of a request URL as the runtime serializes it, without its `?`: the fragment (from
/// the first `#`, which a serialized path or query never holds raw) cut off first; empty when
/// there is none.
pub fn query_of_url(url: &str) -> &str {
    let before_fragment = url.split_once('#').map_or(url, |(before, _)| before);
    before_fragment
        .split_once('?')
        .map_or("", |(_, query)| query)
}

/// A path's segments, as the producer always split them: outer slashes ignored.
fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.trim_matches('/').split('/')
}

fn param_name(segment: &str) -> Option<&str> {
    segment.strip_prefix('{')?.strip_suffix('}')
}

fn fits(pattern: &str, path: &[&str]) -> bool {
    segments(pattern).count() == path.len()
        && segments(pattern)
            .zip(path)
            .all(|(s, p)| param_name(s).is_some() || s == *p)
}

/// Whether two patterns fit the same paths: they differ at most in their params' names.
fn same_path(a: &str, b: &str) -> bool {
    segments(a).count() == segments(b).count()
        && segments(a)
            .zip(segments(b))
            .all(|(a, b)| a == b || (param_name(a).is_some() && param_name(b).is_some()))
}

/// Compares two patterns of the same length segment by segment: at the first place where one
/// is literal and the other a `{name}`, the literal one is more specific.
fn specificity(a: &str, b: &str) -> Ordering {
    segments(a)
        .zip(segments(b))
        .map(|(a, b)| param_name(b).is_some().cmp(&param_name(a).is_some()))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_splits_into_its_path_and_query() {
        let cases = [
            ("https://jobs.example.com/v1/jobs", "/v1/jobs", ""),
            ("http://127.0.0.1:8787/v1/jobs?x=1", "/v1/jobs", "x=1"),
            ("https://h/v1/jobs?s=dead#top", "/v1/jobs", "s=dead"),
            ("https://h/v1/jobs?", "/v1/jobs", ""),
            ("https://h/v1/jobs?a=1#f?g", "/v1/jobs", "a=1"),
            ("https://h/#f?g", "/", ""),
            ("https://h/", "/", ""),
            ("https://h", "/", ""),
            ("https://h/a%3Fb/c?b=%23", "/a%3Fb/c", "b=%23"),
            ("https://user:pw@h:1/p?q", "/p", "q"),
        ];
        for (url, path, query) in cases {
            assert_eq!(
                (path_of_url(url), query_of_url(url)),
                (path, query),
                "{url}"
            );
        }
    }

    const TABLE: &[Route<&str>] = &[
        row("/v1/jobs", Method::Post, "enqueue"),
        row("/v1/jobs/batch", Method::Post, "batch"),
        row("/v1/jobs/{id}", Method::Get, "job"),
        row("/v1/admin/schedules/{id}", Method::Delete, "delete"),
        row("/v1/admin/schedules/{id}", Method::Get, "get"),
        row("/v1/admin/schedules/{id}", Method::Patch, "patch"),
        row("/v1/admin/pauses/{kind}/{name}", Method::Delete, "resume"),
        row("/v1/admin/jobs/retry", Method::Post, "bulk retry"),
        row("/v1/admin/jobs/{id}/retry", Method::Post, "retry"),
    ];

    const fn row(
        pattern: &'static str,
        method: Method,
        target: &'static str,
    ) -> Route<&'static str> {
        Route {
            pattern,
            method,
            target,
        }
    }

    fn found(method: &str, path: &str) -> (&'static str, Vec<(&'static str, String)>) {
        match lookup(TABLE, method, path) {
            Match::Found { route, params } => (
                route.target,
                params.0.iter().map(|(n, v)| (*n, v.to_string())).collect(),
            ),
            other => panic!("{method} {path}: {other:?}"),
        }
    }

    fn allow(method: &str, path: &str) -> String {
        match lookup(TABLE, method, path) {
            Match::MethodNotAllowed { allow } => allow,
            other => panic!("{method} {path}: {other:?}"),
        }
    }

    #[test]
    fn a_path_and_method_find_their_row_and_capture_the_params() {
        assert_eq!(found("POST", "/v1/jobs"), ("enqueue", vec![]));
        assert_eq!(
            found("GET", "/v1/jobs/01J"),
            ("job", vec![("id", "01J".into())])
        );
        assert_eq!(
            found("DELETE", "/v1/admin/pauses/family/low"),
            (
                "resume",
                vec![("kind", "family".into()), ("name", "low".into())]
            )
        );
        assert_eq!(found("PATCH", "/v1/admin/schedules/7").0, "patch");
    }

    #[test]
    fn outer_slashes_do_not_matter() {
        assert_eq!(found("POST", "/v1/jobs/").0, "enqueue");
        assert_eq!(found("POST", "v1/jobs").0, "enqueue");
    }

    #[test]
    fn a_literal_segment_beats_a_param_and_owns_the_path() {
        assert_eq!(found("POST", "/v1/jobs/batch").0, "batch");
        assert_eq!(allow("GET", "/v1/jobs/batch"), "POST");
        assert_eq!(found("POST", "/v1/admin/jobs/retry").0, "bulk retry");
        assert_eq!(found("POST", "/v1/admin/jobs/7/retry").0, "retry");
        assert_eq!(
            found("POST", "/v1/admin/jobs/7/retry").1,
            vec![("id", "7".to_string())]
        );
    }

    #[test]
    fn a_known_path_with_another_method_lists_its_methods_in_a_fixed_order() {
        assert_eq!(allow("PUT", "/v1/admin/schedules/7"), "GET, PATCH, DELETE");
        assert_eq!(allow("HEAD", "/v1/jobs/01J"), "GET");
        assert_eq!(allow("GET", "/v1/jobs"), "POST");
    }

    #[test]
    fn an_unknown_path_is_not_found_whatever_the_method() {
        for path in [
            "/v1/nothing",
            "/v1/jobs/1/2",
            "/",
            "",
            "/v1/admin/pauses/family",
        ] {
            assert!(
                matches!(lookup(TABLE, "GET", path), Match::NotFound),
                "{path}"
            );
        }
    }

    #[test]
    fn a_missing_param_reads_as_empty() {
        let Match::Found { params, .. } = lookup(TABLE, "GET", "/v1/jobs/01J") else {
            panic!("no row")
        };
        assert_eq!(params.get("id"), "01J");
        assert_eq!(params.get("name"), "");
    }

    #[test]
    fn a_row_behind_one_with_the_same_path_and_method_is_shadowed() {
        assert!(shadowed(TABLE).is_empty());
        let twice = [
            row("/v1/jobs/{id}", Method::Get, "first"),
            row("/v1/jobs/{job}", Method::Get, "second"),
            row("/v1/jobs/{id}", Method::Post, "other method"),
            row("/v1/jobs/batch", Method::Get, "more specific"),
        ];
        assert_eq!(shadowed(&twice), vec!["GET /v1/jobs/{job}"]);
    }
}
