//! Every status write in this crate's SQL is a move the state machine allows: for each
//! `UPDATE jobs` that sets `status`, each state its `WHERE` lets in, moved to each state its
//! `SET` can write, is a row of `TRANSITIONS` (shared `job::lifecycle`), or no move at all. Read
//! from the sources, so a statement added or changed anywhere in `store/src` is held to it; a
//! status the SQL does not spell out (spliced or bound) fails too, since it cannot be checked.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use jobs_shared::job::lifecycle::{can_transition, JobStatus};

/// A string literal of a source file, as its text reads, and the line it starts on.
struct Literal {
    line: usize,
    text: String,
}

/// The string literals of Rust source `code` (comments skipped, escapes and line continuations
/// read as the compiler reads them; raw strings as they are).
fn literals(code: &str) -> Vec<Literal> {
    let bytes: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < bytes.len() {
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        match c {
            '\n' => line += 1,
            '/' if next == Some('/') => {
                while i < bytes.len() && bytes[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '/' if next == Some('*') => {
                while i + 1 < bytes.len() && !(bytes[i] == '*' && bytes[i + 1] == '/') {
                    line += usize::from(bytes[i] == '\n');
                    i += 1;
                }
                i += 2;
                continue;
            }
            // A char literal ('"', '\'') or a lifetime ('a): neither starts a string.
            '\'' => {
                if next == Some('\\') {
                    i += 4;
                    continue;
                }
                if bytes.get(i + 2) == Some(&'\'') {
                    i += 3;
                    continue;
                }
            }
            'r' if next == Some('#') || next == Some('"') => {
                let mut j = i + 1;
                let mut hashes = 0;
                while bytes.get(j) == Some(&'#') {
                    hashes += 1;
                    j += 1;
                }
                if bytes.get(j) == Some(&'"') && (i == 0 || !bytes[i - 1].is_alphanumeric()) {
                    let start_line = line;
                    let close: String = std::iter::once('"')
                        .chain("#".repeat(hashes).chars())
                        .collect();
                    let rest: String = bytes[j + 1..].iter().collect();
                    let end = rest.find(&close).unwrap_or(rest.len());
                    let text = rest[..end].to_string();
                    line += text.matches('\n').count();
                    out.push(Literal {
                        line: start_line,
                        text,
                    });
                    i = j + 1 + end + close.chars().count();
                    continue;
                }
            }
            '"' => {
                let start_line = line;
                let mut text = String::new();
                i += 1;
                while i < bytes.len() && bytes[i] != '"' {
                    if bytes[i] == '\\' {
                        let escaped = bytes.get(i + 1).copied().unwrap_or(' ');
                        if escaped == '\n' {
                            // A line continuation: the newline and the next line's indent go.
                            line += 1;
                            i += 2;
                            while i < bytes.len() && bytes[i].is_whitespace() {
                                line += usize::from(bytes[i] == '\n');
                                i += 1;
                            }
                            continue;
                        }
                        text.push(match escaped {
                            'n' => '\n',
                            't' => '\t',
                            other => other,
                        });
                        i += 2;
                        continue;
                    }
                    line += usize::from(bytes[i] == '\n');
                    text.push(bytes[i]);
                    i += 1;
                }
                out.push(Literal {
                    line: start_line,
                    text,
                });
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// `text` cut at the first of `words` outside parentheses and quotes, from `from`.
fn clause<'a>(text: &'a str, from: usize, words: &[&str]) -> &'a str {
    let (mut depth, mut quoted) = (0i32, false);
    let upper = text.to_ascii_uppercase();
    for (at, c) in text[from..].char_indices() {
        let at = from + at;
        match c {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth -= 1,
            _ => {}
        }
        let boundary = at == 0 || !text.as_bytes()[at - 1].is_ascii_alphanumeric();
        if depth == 0 && !quoted && boundary {
            if let Some(word) = words.iter().find(|w| upper[at..].starts_with(**w)) {
                let after = upper
                    .as_bytes()
                    .get(at + word.len())
                    .copied()
                    .unwrap_or(b' ');
                if !after.is_ascii_alphanumeric() && after != b'_' {
                    return &text[from..at];
                }
            }
        }
    }
    &text[from..]
}

/// The status names quoted in `sql` ('queued'...).
fn statuses_in(sql: &str) -> BTreeSet<&'static str> {
    JobStatus::ALL
        .iter()
        .map(|s| s.as_str())
        .filter(|name| sql.contains(&format!("'{name}'")))
        .collect()
}

/// What's wrong with one statement's status write, if anything.
fn check(sql: &str) -> Result<(), String> {
    let sql = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    let Some(update) = sql.find("UPDATE jobs SET ") else {
        return Ok(());
    };
    let set_from = update + "UPDATE jobs SET ".len();
    let set = clause(&sql, set_from, &["FROM", "WHERE", "RETURNING"]);
    let assignment = split_top(set)
        .into_iter()
        .find(|a| a.trim_start().starts_with("status ") || a.trim_start().starts_with("status="));
    let Some(assignment) = assignment else {
        return Ok(()); // writes no status
    };
    let expr = assignment.split_once('=').map_or("", |(_, e)| e).trim();
    let Some(to) = written(expr) else {
        return Err(format!(
            "its status is not spelled out: `{}`",
            assignment.trim()
        ));
    };
    let where_at = sql[set_from..].find(" WHERE ").map(|at| set_from + at + 1);
    let condition = where_at.map_or("", |at| clause(&sql, at + "WHERE".len(), &["RETURNING"]));
    if condition.contains("status = '{") || condition.contains("status IN ({") {
        return Err("the states it moves from are spliced in, not spelled out".into());
    }
    let from = sources(condition)?;
    let mut illegal = Vec::new();
    for &f in &from {
        for &t in &to {
            let (fs, ts) = (JobStatus::parse(f).unwrap(), JobStatus::parse(t).unwrap());
            if f != t && !can_transition(fs, ts) {
                illegal.push(format!("{f} -> {t}"));
            }
        }
    }
    if illegal.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "moves the state machine forbids: {}",
            illegal.join(", ")
        ))
    }
}

/// The states a `SET status = <expr>` writes, when each value it can take is spelled out: a
/// status name, or `status` itself (kept: no move), alone, as the branches of an `IIF`, or as
/// the `THEN`s and `ELSE` of a `CASE`.
fn written(expr: &str) -> Option<BTreeSet<&'static str>> {
    let value = |v: &str| -> Option<Option<&'static str>> {
        let v = v.trim();
        if v == "status" || v == "jobs.status" {
            return Some(None);
        }
        let name = v.strip_prefix('\'')?.strip_suffix('\'')?;
        JobStatus::parse(name).map(|s| Some(s.as_str()))
    };
    let values: Vec<&str> =
        if let Some(args) = expr.strip_prefix("IIF(").and_then(|e| e.strip_suffix(')')) {
            let args = split_top(args);
            (args.len() == 3).then(|| args[1..].to_vec())?
        } else if let Some(body) = expr
            .strip_prefix("CASE ")
            .and_then(|e| e.strip_suffix(" END"))
        {
            let mut values = Vec::new();
            for part in body.split(" THEN ").skip(1) {
                values.push(part.split(" WHEN ").next()?.split(" ELSE ").next()?);
            }
            values.extend(body.split(" ELSE ").nth(1));
            values
        } else {
            vec![expr]
        };
    let mut states = BTreeSet::new();
    for v in values {
        states.extend(value(v)?);
    }
    Some(states)
}

/// `text` split at its commas outside parentheses and quotes.
fn split_top(text: &str) -> Vec<&str> {
    let (mut depth, mut quoted, mut start) = (0i32, false, 0);
    let mut parts = Vec::new();
    for (at, c) in text.char_indices() {
        match c {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth -= 1,
            ',' if depth == 0 && !quoted => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// The states a `WHERE` lets in, from its conditions on the updated row's `status` (or its
/// `jobs.status`; another row's, `s.status`, says nothing of this one): every state when it
/// names none.
fn sources(condition: &str) -> Result<BTreeSet<&'static str>, String> {
    let mut found = BTreeSet::new();
    let mut any = false;
    let mut rest = condition;
    while let Some(at) = rest.find("status") {
        let head = &rest[..at];
        let before = head.chars().last().unwrap_or(' ');
        // `status`, `+status` or `jobs.status`: the updated row's (another alias is another row).
        let qualifier = head.strip_suffix('.').map(|h| {
            let start = h
                .rfind(|c: char| !c.is_alphanumeric() && c != '_')
                .map_or(0, |i| i + 1);
            &h[start..]
        });
        let prefix_ok = match qualifier {
            Some(alias) => alias == "jobs",
            None => before == ' ' || before == '(' || before == '+',
        };
        let after = &rest[at + "status".len()..];
        let tail = after.trim_start();
        let word_end = !after.starts_with(|c: char| c.is_alphanumeric() || c == '_');
        if prefix_ok && word_end {
            let (negated, list) = if let Some(l) = tail.strip_prefix("NOT IN") {
                (true, l)
            } else if let Some(l) = tail.strip_prefix("IN") {
                (false, l)
            } else if let Some(l) = tail.strip_prefix("<>").or_else(|| tail.strip_prefix("!=")) {
                (true, l)
            } else if let Some(l) = tail.strip_prefix('=') {
                (false, l)
            } else {
                rest = after;
                continue;
            };
            let list = list.trim_start();
            let operand = if list.starts_with('(') {
                &list[..list.find(')').map_or(list.len(), |e| e + 1)]
            } else {
                list.split_whitespace().next().unwrap_or("")
            };
            if operand.starts_with('?') || operand.contains("->>") || operand.contains('{') {
                return Err(format!(
                    "the states it moves from are bound, not spelled out: `status {}`",
                    &tail[..tail.len().min(40)]
                ));
            }
            let named = statuses_in(operand);
            let named: BTreeSet<&str> = if negated {
                JobStatus::ALL
                    .iter()
                    .map(|s| s.as_str())
                    .filter(|s| !named.contains(s))
                    .collect()
            } else {
                named
            };
            found.extend(named);
            any = true;
        }
        rest = after;
    }
    Ok(if any {
        found
    } else {
        JobStatus::ALL.iter().map(|s| s.as_str()).collect()
    })
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|x| x == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

#[test]
fn every_status_write_in_store_is_a_row_of_transitions() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut problems = Vec::new();
    let mut writes = 0;
    for file in rust_files(&src) {
        let code = fs::read_to_string(&file).unwrap();
        for literal in literals(&code) {
            let at = file.strip_prefix(&src).unwrap().display().to_string();
            let text = literal.text.trim_start();
            // A statement's SET made of pieces could not be read as one: each is written whole.
            if text.contains("UPDATE jobs SET {") || text.starts_with("status =") {
                problems.push(format!(
                    "store/src/{at}:{}: a status write in pieces",
                    literal.line
                ));
            }
            if !literal.text.contains("UPDATE jobs SET") {
                continue;
            }
            writes += usize::from(literal.text.contains("status"));
            if let Err(problem) = check(&literal.text) {
                problems.push(format!("store/src/{at}:{}: {problem}", literal.line));
            }
        }
    }
    assert!(
        writes >= 10,
        "the scan found the store's status writes ({writes})"
    );
    assert!(
        problems.is_empty(),
        "status writes that are no row of TRANSITIONS:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_check_refuses_a_move_the_table_lacks_and_a_status_it_cannot_read() {
    let ok = "UPDATE jobs SET status = 'running', attempts = attempts + 1 \
              WHERE id = ?1 AND +status IN ('queued', 'retrying')";
    assert_eq!(check(ok), Ok(()));
    let kept = "UPDATE jobs SET status = IIF(?3, status, 'scheduled') WHERE status = 'queued'";
    assert_eq!(check(kept), Ok(()), "keeping a status is no move");
    let other_row = "UPDATE jobs SET status = 'queued' FROM json_each(?1) o WHERE jobs.id = o.value \
                     AND jobs.status = 'running' AND EXISTS (SELECT 1 FROM jobs s WHERE s.status = 'succeeded')";
    assert_eq!(
        check(other_row),
        Ok(()),
        "another row's status is not this row's"
    );

    let skipped_ahead = "UPDATE jobs SET status = 'succeeded' WHERE id = ?1 AND status = 'queued'";
    assert_eq!(
        check(skipped_ahead),
        Err("moves the state machine forbids: queued -> succeeded".into())
    );
    let anything = "UPDATE jobs SET status = 'queued', attempts = 0 WHERE id = ?1";
    assert!(
        check(anything).unwrap_err().contains("succeeded -> queued"),
        "no WHERE on status: every state"
    );
    let cases = "UPDATE jobs SET status = CASE ?2 WHEN 1 THEN 'retrying' WHEN 2 THEN 'skipped' \
                 ELSE 'dead' END WHERE status = 'running'";
    assert_eq!(check(cases), Ok(()));
    let cases_bound = "UPDATE jobs SET status = CASE ?2 WHEN 1 THEN 'retrying' ELSE ?3 END WHERE status = 'running'";
    assert!(check(cases_bound).unwrap_err().contains("not spelled out"));
    let bound = "UPDATE jobs SET status = ?2 WHERE id = ?1 AND status = 'running'";
    assert!(check(bound).unwrap_err().contains("not spelled out"));
    let bound_from = "UPDATE jobs SET status = 'queued' WHERE id = ?1 AND status = ?2";
    assert!(check(bound_from).unwrap_err().contains("bound"));
    let negated = "UPDATE jobs SET status = 'dead' WHERE status NOT IN ('running', 'retrying', 'scheduled', 'queued')";
    assert!(check(negated).unwrap_err().contains("succeeded -> dead"));

    let code = "let a = \"UPDATE jobs SET status = 'dead' \\\n    WHERE status = 'running'\"; // \"not this\"\nlet c = '\"';";
    let found = literals(code);
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].text,
        "UPDATE jobs SET status = 'dead' WHERE status = 'running'"
    );
}
