// rss_feed_refresh (docs/app-guide.md "rss_feed_refresh"): the built-in handler against a real
// local feed server serving RSS 2.0 and Atom documents, a malformed one, a 404 and a 429, and
// hostile feeds (a 500, garbage, a body past the cap, one that never answers, rows D1 refuses). The
// consumer runs with a 2 s feed timeout and a 5 s refresh budget so the time bounds show fast.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { enqueueBatch, logCollector, waitFor, withPlatformAndApp, TOKENS } from "./support/platform.mjs";
import { parsePrometheusText, sampleValue } from "./support/prometheus_text.mjs";

const RSS = `<?xml version="1.0"?>
<rss version="2.0"><channel><title>News</title>
<item><title>One</title><link>https://n.io/1</link><guid>rss-1</guid><description>First</description>
  <pubDate>Tue, 10 Jun 2025 04:00:00 GMT</pubDate></item>
<item><title>Two</title><link>https://n.io/2</link><pubDate>Wed, 11 Jun 2025 04:00:00 GMT</pubDate></item>
<item><title>No link</title><guid>rss-3</guid></item>
<item><title>One, again</title><link>https://n.io/1</link><guid>rss-1</guid></item>
</channel></rss>`;

const ATOM = `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Blog</title><id>urn:blog</id>
<entry><title>Hello</title><id>urn:atom-1</id><link href="https://b.io/hello"/>
  <updated>2025-06-10T04:00:00Z</updated><summary>Hi</summary></entry>
<entry><title>Second</title><id>urn:atom-2</id><link rel="alternate" href="https://b.io/2"/>
  <published>2025-06-11T04:00:00Z</published></entry>
</feed>`;

const feed = (xml, extra = {}) => ({ status: 200, raw: xml, headers: { "content-type": "application/rss+xml" }, ...extra });

let app;
let p;
const FEED_TIMEOUT_SECS = 2;
const logs = logCollector();
withPlatformAndApp((started) => ({ app, p } = started), {
  consumerBindings: { RSS_FEED_TIMEOUT_SECS: String(FEED_TIMEOUT_SECS), RSS_REFRESH_BUDGET_SECS: "5" },
  onLog: logs.onLog,
});

const admin = (method, path, json) => p.request(method, `/v1/admin/rss-sources${path}`, { json, token: TOKENS.admin });

async function addSource(name, path, extra = {}) {
  const res = await admin("POST", "", { name, url: app.url(path), ...extra });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

async function refresh(payload, extra = {}) {
  const enq = await p.enqueue({ type: "rss_feed_refresh", payload, ...extra });
  assert.equal(enq.status, 202, JSON.stringify(enq.body));
  return p.waitForStatus(enq.body.id, ["succeeded", "dead"]);
}

const source = async (id) => (await admin("GET", "")).body.sources.find((s) => s.id === id);

describe("rss_feed_refresh", () => {
  let news;
  let blog;
  let gone;

  test("admin adds sources; bad ones are refused with the field", async () => {
    news = await addSource("News", "/feeds/news.xml", { refresh_interval_minutes: 15 });
    blog = await addSource("Blog", "/feeds/blog.atom");
    gone = await addSource("Gone", "/feeds/gone.xml");
    assert.match(news.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(news.is_active, true);
    assert.equal(blog.refresh_interval_minutes, 60);
    const low = await admin("POST", "", { name: "x", url: app.url("/x"), refresh_interval_minutes: 5 });
    assert.equal(low.status, 422);
    assert.equal(low.body.error.field, "refresh_interval_minutes");
    const dup = await admin("POST", "", { name: "again", url: news.url });
    assert.equal(dup.status, 409);
    const anon = await p.request("GET", "/v1/admin/rss-sources", { token: TOKENS.enqueue });
    assert.equal(anon.status, 403);
    // The 15-1440 bound keeps in D1 itself too.
    await assert.rejects(
      p.db.prepare("UPDATE rss_sources SET refresh_interval_minutes = 10 WHERE id = ?").bind(news.id).run(),
    );
  });

  test("refresh all due: RSS and Atom stored untagged, dedup by GUID, failures counted per source", async () => {
    app.script("/feeds/news.xml", [feed(RSS)]);
    app.script("/feeds/blog.atom", [feed(ATOM, { headers: { "content-type": "application/atom+xml" } })]);
    app.script("/feeds/gone.xml", [{ status: 404 }]);
    const job = await refresh({});
    assert.equal(job.status, "succeeded");
    const by = Object.fromEntries(job.result.sources.map((s) => [s.name, s]));
    assert.deepEqual(
      [by.News.outcome, by.News.new, by.News.duplicate, by.News.skipped],
      ["refreshed", 2, 1, 1],
    );
    assert.deepEqual([by.Blog.outcome, by.Blog.new], ["refreshed", 2]);
    assert.equal(by.Gone.outcome, "failed");
    assert.match(by.Gone.error, /HTTP 404/);

    const items = (
      await p.db.prepare("SELECT * FROM feed_items WHERE source_id = ? ORDER BY id").bind(news.id).all()
    ).results;
    assert.deepEqual(items.map((i) => i.title), ["One", "Two"]);
    assert.equal(items[0].item_guid, "rss-1");
    assert.match(items[1].item_guid, /^hash:[0-9a-f]{64}$/, "no GUID: URL + published hash");
    assert.equal(items[0].content_hash, createHash("md5").update("OneFirst").digest("hex"));
    assert.equal(items[0].published_at, Date.parse("2025-06-10T04:00:00Z"));
    assert.ok(items.every((i) => i.ai_tagged === 0 && i.ai_tags === null), "new items are untagged");
    assert.equal(await p.count("SELECT count(*) FROM feed_items WHERE item_guid = 'urn:atom-1' AND url = 'https://b.io/hello'"), 1);

    const counters = await source(news.id);
    assert.deepEqual(counters.items, { new: 2, duplicate: 1, skipped: 1 });
    assert.equal(counters.error_count, 0);
    assert.ok(counters.last_fetched_at);
    const g = await source(gone.id);
    assert.equal(g.error_count, 1);
    assert.match(g.last_error_message, /HTTP 404/);

    // Again: refreshed sources are not due yet; the failed one (never fetched) is.
    const fetchesBefore = app.requests("/feeds/news.xml").length;
    const again = await refresh({});
    const by2 = Object.fromEntries(again.result.sources.map((s) => [s.name, s.outcome]));
    assert.deepEqual(by2, { News: "not_due", Blog: "not_due", Gone: "failed" });
    assert.equal(app.requests("/feeds/news.xml").length, fetchesBefore);
    assert.equal((await source(gone.id)).error_count, 2);
  });

  test("one source, forced: known GUIDs are duplicates, nothing is stored twice", async () => {
    const job = await refresh({ source_id: news.id, force_refresh: true });
    assert.equal(job.status, "succeeded");
    assert.deepEqual(job.result.sources[0], {
      id: news.id, name: "News", outcome: "refreshed", new: 0, duplicate: 3, skipped: 1,
    });
    assert.equal(await p.count("SELECT count(*) FROM feed_items WHERE source_id = ?", news.id), 2);
    assert.deepEqual((await source(news.id)).items, { new: 2, duplicate: 4, skipped: 2 });
    const notForced = await refresh({ source_id: news.id });
    assert.equal(notForced.result.sources[0].outcome, "not_due");
    const missing = await refresh({ source_id: "00000000-0000-4000-8000-000000000000" });
    assert.equal(missing.status, "dead");
    assert.equal(missing.error.class, "invalid_payload");
  });

  test("two refreshes that find one source due at once fetch it once: the other says it is being refreshed", async () => {
    app.script("/feeds/shared.xml", [feed(RSS, { delayMs: 500 }), feed(RSS, { delayMs: 500 })]);
    const shared = await addSource("Shared", "/feeds/shared.xml");
    // One request, so one queue batch: the two run at the same time.
    const ids = await enqueueBatch(p, { type: "rss_feed_refresh", payload: { source_id: shared.id, force_refresh: true } }, 2);
    const jobs = await Promise.all(ids.map((id) => p.waitForStatus(id, ["succeeded", "dead"])));
    assert.deepEqual(jobs.map((j) => j.result.sources[0].outcome).sort(), ["refreshed", "refreshing"]);
    assert.equal(app.requests("/feeds/shared.xml").length, 1, "fetched once");
    const row = await p.db.prepare("SELECT refreshing_until FROM rss_sources WHERE id = ?").bind(shared.id).first();
    assert.equal(row.refreshing_until, null, "the claim ends with the refresh");
    // Once it is written, the next refresh claims it again.
    assert.equal((await refresh({ source_id: shared.id, force_refresh: true })).result.sources[0].outcome, "refreshed");
  });

  test("a malformed feed is a retryable error counted on the source", async () => {
    const bad = await addSource("Broken", "/feeds/broken.xml");
    app.script("/feeds/broken.xml", [feed("<rss><channel><item><title>x</item></channel></rss>")]);
    const job = await refresh({ source_id: bad.id }, { max_attempts: 1 });
    assert.equal(job.status, "dead");
    assert.equal(job.error.class, "server_error");
    assert.match(job.error.message, /unreadable feed/);
    const s = await source(bad.id);
    assert.equal(s.error_count, 1);
    assert.match(s.last_error_message, /unreadable feed: invalid XML/);
  });

  test("a feed redirecting forever through long URLs: the runtime's error, which lists them all, is kept cut", async () => {
    const src = await addSource("Loop", "/feeds/loop.xml");
    const long = `/feeds/loop.xml?pad=${"x".repeat(4_000)}`;
    app.script("/feeds/loop.xml", [{ status: 302, headers: { location: long } }]);
    app.script(long, [{ status: 302, headers: { location: long } }]);
    const job = await refresh({ source_id: src.id }, { max_attempts: 1 });
    assert.equal(job.status, "dead");
    assert.match(job.error.message, /redirects/i);
    // 1,000 characters and "...", then " (gave up after 1 attempt)": not the ~80 KB list.
    assert.ok(job.error.message.length < 1_100, `${job.error.message.length} characters`);
    assert.ok(job.runs[0].error.message.length < 1_100);
    assert.ok((await source(src.id)).last_error_message.length < 1_100);
  });

  test("429 with Retry-After: the job retries after that delay, then succeeds and resets errors", async () => {
    const limited = await addSource("Limited", "/feeds/limited.xml");
    app.script("/feeds/limited.xml", [{ status: 429, headers: { "retry-after": "2" } }, feed(RSS.replaceAll("rss-", "lim-").replaceAll("n.io", "l.io"))]);
    const job = await refresh({ source_id: limited.id });
    assert.equal(job.status, "succeeded");
    assert.equal(job.runs[0].error.class, "rate_limited");
    const [first, ...rest] = app.requests("/feeds/limited.xml");
    const second = rest.at(-1);
    assert.ok(second.at - first.at >= 2000, `refetched ${second.at - first.at} ms later`);
    const s = await source(limited.id);
    assert.equal(s.error_count, 0);
    assert.equal(s.last_error_message, null);
    assert.equal(s.retry_after_until, null);
    assert.equal(s.items.new, 2);
    // Every attempt keeps its own feed summary, the failed one too, listed on the job.
    const summaries = job.runs.map((r) => r.artifacts.find((a) => a.kind === "feed_summary"));
    assert.ok(summaries.every(Boolean), JSON.stringify(job.runs));
    const [failed] = summaries[0].inline.sources;
    assert.deepEqual([failed.id, failed.outcome], [limited.id, "failed"]);
    assert.match(failed.error, /429/);
    const [refreshed] = summaries.at(-1).inline.sources;
    assert.deepEqual([refreshed.id, refreshed.outcome, refreshed.new], [limited.id, "refreshed", 2]);
    assert.equal(summaries[0].content_type, "application/json");
    assert.ok(job.runs.at(-1).bytes.in > 0, "the feed's bytes were read");
    assert.deepEqual(job.artifacts.map((a) => a.run), job.runs.map((r) => r.run).reverse(), "newest run first");
  });

  test("5 consecutive failures disable a source; the admin re-enables it", async () => {
    const flaky = await addSource("Flaky", "/feeds/flaky.xml");
    app.script("/feeds/flaky.xml", [{ status: 500 }]);
    for (let i = 1; i <= 5; i++) {
      const job = await refresh({ source_id: flaky.id, force_refresh: true }, { max_attempts: 1 });
      assert.equal(job.status, "dead");
      const s = await source(flaky.id);
      assert.equal(s.error_count, i);
      assert.equal(s.is_active, i < 5, `after ${i} failures`);
    }
    const fetches = app.requests("/feeds/flaky.xml").length;
    const skipped = await refresh({ source_id: flaky.id, force_refresh: true });
    assert.equal(skipped.status, "succeeded");
    assert.equal(skipped.result.sources[0].outcome, "inactive");
    assert.equal(app.requests("/feeds/flaky.xml").length, fetches, "a disabled source is not fetched");

    const enabled = await admin("PATCH", `/${flaky.id}`, { is_active: true });
    assert.equal(enabled.status, 200);
    assert.equal(enabled.body.is_active, true);
    assert.equal(enabled.body.error_count, 0);
    assert.equal(enabled.body.last_error_message, null);
    app.script("/feeds/flaky.xml", [feed(ATOM.replaceAll("urn:atom", "urn:flaky"))]);
    const ok = await refresh({ source_id: flaky.id });
    assert.equal(ok.result.sources[0].new, 2);
    assert.equal((await admin("PATCH", "/nope", { is_active: true })).status, 404);
    assert.equal((await admin("PATCH", `/${flaky.id}`, { is_active: "yes" })).status, 422);
  });

  test("404 and 410 count and retry; the 5th failure in a row disables the source, saying why, and ends the job", async () => {
    const missing = await addSource("Missing", "/feeds/missing.xml");
    app.script("/feeds/missing.xml", [{ status: 404 }]);
    const enq = await p.enqueue({ type: "rss_feed_refresh", payload: { source_id: missing.id }, max_attempts: 3 });
    const retrying = await p.waitForStatus(enq.body.id, ["retrying", "dead"]);
    assert.deepEqual([retrying.status, retrying.error.class, retrying.error.message], ["retrying", "gone", "HTTP 404"]);
    assert.equal((await source(missing.id)).error_count, 1);
    await p.request("POST", `/v1/admin/jobs/${enq.body.id}/cancel`, { token: TOKENS.admin });

    const gone = await addSource("Gone410", "/feeds/410.xml");
    app.script("/feeds/410.xml", [{ status: 410 }]);
    for (let i = 1; i <= 4; i++) {
      const job = await refresh({ source_id: gone.id, force_refresh: true }, { max_attempts: 1 });
      assert.deepEqual([job.status, job.error.class], ["dead", "gone"]);
      const s = await source(gone.id);
      assert.deepEqual([s.error_count, s.is_active, s.disabled_reason, s.disabled_at], [i, true, null, null]);
    }
    // The 5th: a job that could still retry ends at once, since nothing but a re-enable helps.
    const fifth = await refresh({ source_id: gone.id, force_refresh: true }, { max_attempts: 3 });
    assert.deepEqual([fifth.status, fifth.attempts, fifth.error.class], ["dead", 1, "source_disabled"]);
    assert.equal(fifth.error.message, "disabled after 5 consecutive failures; the last: HTTP 410");
    const off = await source(gone.id);
    assert.deepEqual([off.is_active, off.error_count, off.disabled_reason], [false, 5, "5 consecutive failures; the last: HTTP 410"]);
    assert.ok(Date.parse(off.disabled_at) >= Date.parse(fifth.started_at));

    const enabled = await admin("PATCH", `/${gone.id}`, { is_active: true, error_count: 0 });
    assert.deepEqual([enabled.body.is_active, enabled.body.disabled_reason, enabled.body.disabled_at], [true, null, null]);
    const byHand = await admin("PATCH", `/${gone.id}`, { is_active: false });
    assert.match(byHand.body.disabled_reason, /^disabled by an operator \(token:[0-9a-f]+\)$/);
    assert.ok(byHand.body.disabled_at);
    const twice = await admin("PATCH", `/${gone.id}`, { is_active: false });
    assert.equal(twice.body.disabled_at, byHand.body.disabled_at, "disabling a disabled source keeps why and when");
  });
});

describe("rss_feed_refresh under hostile feeds", () => {
  /** Leaves only the sources a test adds active. */
  const onlyNewSources = () => p.db.prepare("UPDATE rss_sources SET is_active = 0").run();
  const byName = (job) => Object.fromEntries(job.result.sources.map((s) => [s.name, s]));
  const itemsOf = (id) => p.count("SELECT count(*) FROM feed_items WHERE source_id = ?", id);
  const many = (n, tag) =>
    `<?xml version="1.0"?><rss version="2.0"><channel><title>Big</title>${Array.from(
      { length: n },
      (_, i) => `<item><title>Item ${i}</title><link>https://big.io/${tag}/${i}</link><guid>${tag}-${i}</guid>` +
        `<description>${"Words about the item. ".repeat(12)}</description></item>`,
    ).join("")}</channel></rss>`;

  test("one bad feed breaks nothing else: each failure is its own source's, and 5 in a row disable it", async () => {
    await onlyNewSources();
    const good = await addSource("Good", "/hostile/good.xml", { refresh_interval_minutes: 15 });
    const atom = await addSource("GoodAtom", "/hostile/good.atom");
    const bad = {
      Err500: await addSource("Err500", "/hostile/500.xml"),
      Garbage: await addSource("Garbage", "/hostile/garbage.xml"),
      Huge: await addSource("Huge", "/hostile/huge.xml"),
      Hanging: await addSource("Hanging", "/hostile/hanging.xml"),
      Poison: await addSource("Poison", "/hostile/poison.xml"),
    };
    app.script("/hostile/good.xml", [feed(RSS.replaceAll("rss-", "good-").replaceAll("n.io", "good.io"))]);
    app.script("/hostile/good.atom", [feed(ATOM.replaceAll("urn:atom", "urn:good"))]);
    app.script("/hostile/500.xml", [{ status: 500 }]);
    app.script("/hostile/garbage.xml", [feed("\u0000<<<this is not xml>>>&&&")]);
    const huge = many(10_000, "huge"); // about 3 MB: past the 1 MiB cap (and D1's value limit)
    assert.ok(huge.length > 2_500_000);
    app.script("/hostile/huge.xml", [feed(huge)]);
    app.script("/hostile/hanging.xml", [feed(RSS, { delayMs: (FEED_TIMEOUT_SECS + 3) * 1000 })]);
    app.script("/hostile/poison.xml", [feed(many(3, "poison"))]);
    // A real D1 fault: rows from this one feed are refused.
    await p.db
      .prepare("CREATE TRIGGER poison_rows BEFORE INSERT ON feed_items WHEN NEW.url LIKE '%/poison/%' BEGIN SELECT RAISE(ABORT, 'poisoned row'); END")
      .run();
    try {
      const job = await refresh({});
      assert.equal(job.status, "succeeded", JSON.stringify(job.error));
      const by = byName(job);
      assert.deepEqual([by.Good.outcome, by.Good.new], ["refreshed", 2]);
      assert.deepEqual([by.GoodAtom.outcome, by.GoodAtom.new], ["refreshed", 2]);
      assert.equal(await itemsOf(good.id), 2);
      assert.equal(await itemsOf(atom.id), 2);
      const errors = {
        Err500: /HTTP 500/,
        Garbage: /unreadable feed/,
        Huge: /over 1048576 bytes/,
        Hanging: new RegExp(`within ${FEED_TIMEOUT_SECS * 1000} ms`),
        Poison: /D1 refused the feed's rows[\s\S]*poisoned row/,
      };
      for (const [name, error] of Object.entries(errors)) {
        assert.equal(by[name].outcome, "failed", name);
        assert.match(by[name].error, error, name);
        const row = await source(bad[name].id);
        assert.equal(row.error_count, 1, name);
        assert.match(row.last_error_message, error, name);
        assert.ok(row.last_attempt_at, `${name}: the attempt is recorded`);
        assert.equal(row.last_fetched_at, null, `${name}: never fetched`);
        assert.equal(await itemsOf(bad[name].id), 0, name);
      }
      assert.equal(job.result.not_reached, 0);

      // The failing sources stay due; the good ones are not. At the 5th failure in a row each
      // bad source is disabled, saying why; after that it is not fetched.
      for (let i = 2; i <= 5; i++) {
        const again = byName(await refresh({}));
        assert.deepEqual([again.Good.outcome, again.GoodAtom.outcome], ["not_due", "not_due"]);
        for (const name of Object.keys(bad)) {
          assert.equal(again[name].outcome, "failed", `${name} refresh ${i}`);
          const row = await source(bad[name].id);
          assert.deepEqual([row.error_count, row.is_active], [i, i < 5], `${name} after ${i}`);
        }
      }
      for (const name of Object.keys(bad)) {
        assert.match((await source(bad[name].id)).last_error_message, /^disabled after 5 consecutive failures; the last: /);
      }
      const fetches = app.requests("/hostile/500.xml").length;
      const after = await refresh({});
      assert.deepEqual(after.result.sources.map((s) => s.outcome).sort(), ["not_due", "not_due"]);
      assert.equal(app.requests("/hostile/500.xml").length, fetches, "a disabled source is not fetched");
    } finally {
      await p.db.prepare("DROP TRIGGER poison_rows").run();
    }
  });

  test("the refresh's time budget: sources it had no time for are left for the next run, and lead it", async () => {
    await onlyNewSources();
    const slow = [];
    for (let i = 0; i < 14; i++) {
      app.script(`/hostile/slow-${i}.xml`, [feed(RSS, { delayMs: (FEED_TIMEOUT_SECS + 2) * 1000 })]);
      slow.push(await addSource(`Slow${i}`, `/hostile/slow-${i}.xml`));
    }
    // 6 feeds at a time, each cut at 2 s, none started unless it can end within 5 s: two
    // rounds of 6 start, the last 2 sources are not reached.
    const job = await refresh({});
    assert.equal(job.status, "succeeded");
    assert.equal(job.result.not_reached, 2);
    const notReached = job.result.sources.filter((s) => s.outcome === "not_reached").map((s) => s.id);
    assert.equal(notReached.length, 2);
    assert.equal(job.result.sources.filter((s) => s.outcome === "failed").length, 12);
    assert.ok(job.runs[0].duration_ms < 7000, `the refresh took ${job.runs[0].duration_ms} ms`);
    for (const id of notReached) {
      const row = await source(id);
      assert.deepEqual([row.error_count, row.last_attempt_at], [0, null], "not reached is not a failure");
    }

    const next = await refresh({});
    const tried = next.result.sources.filter((s) => s.outcome === "failed").map((s) => s.id);
    for (const id of notReached) assert.ok(tried.includes(id), "the sources left over lead the next run");
  });

  test("re-enabling and resetting a source in one call: {is_active: true, error_count: 0}", async () => {
    const off = await addSource("Off", "/hostile/off.xml");
    await p.db.prepare("UPDATE rss_sources SET is_active = 0, error_count = 5, last_error_message = 'x' WHERE id = ?").bind(off.id).run();
    const res = await admin("PATCH", `/${off.id}`, { is_active: true, error_count: 0 });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.is_active, res.body.error_count, res.body.last_error_message], [true, 0, null]);
    const reset = await admin("PATCH", `/${off.id}`, { error_count: 0 });
    assert.equal(reset.status, 200);
    const bad = await admin("PATCH", `/${off.id}`, { is_active: true, error_count: 3 });
    assert.deepEqual([bad.status, bad.body.error.field], [422, "error_count"]);
    const empty = await admin("PATCH", `/${off.id}`, {});
    assert.deepEqual([empty.status, empty.body.error.field], [422, "is_active"]);
    const audit = await p.db.prepare("SELECT action, target FROM audit_log WHERE action LIKE 'rss_source.%' AND target LIKE ? ORDER BY id").bind(`%${off.id}%`).all();
    assert.deepEqual(
      audit.results.map((r) => [r.action, JSON.parse(r.target).patch]),
      [["rss_source.add", undefined], ["rss_source.set_active", { is_active: true, error_count: 0 }], ["rss_source.set_active", { error_count: 0 }]],
      "each change audited once; refused ones not",
    );
  });
});

describe("rss_feed_refresh span events and metrics", () => {
  /** A job's lines of one event, once its last line (`last`) was logged. */
  const linesOf = async (job, name, last) => {
    await waitFor(() => logs.of(job.id).some((l) => l.event === last), { what: `${last} of ${job.id}` });
    return logs.of(job.id).filter((l) => l.event === name);
  };
  const attrs = (lines, ...keys) => lines.map((l) => Object.fromEntries(keys.map((k) => [k, l[k]])));

  test("a refresh logs each span event with its attributes; GET /metrics counts items, errors and fetch time per source", async () => {
    await p.db.prepare("UPDATE rss_sources SET is_active = 0").run();
    const good = await addSource("Spans", "/spans/good.xml");
    const gone = await addSource("SpansGone", "/spans/gone.xml");
    app.script("/spans/good.xml", [feed(RSS.replaceAll("rss-", "spans-").replaceAll("n.io", "spans.io"))]);
    app.script("/spans/gone.xml", [{ status: 404 }]);
    const job = await refresh({});
    assert.equal(job.status, "succeeded");
    const done = (name) => linesOf(job, name, "refresh.completed");

    const started = await done("fetch.started");
    const byUrl = (a, b) => a.source_url.localeCompare(b.source_url);
    assert.deepEqual(
      attrs(started, "source_id", "source_url").sort(byUrl),
      [{ source_id: good.id, source_url: good.url }, { source_id: gone.id, source_url: gone.url }].sort(byUrl),
    );
    for (const line of started) {
      assert.deepEqual(
        [line["job.type"], line.correlation_id, line.level],
        ["rss_feed_refresh", job.correlation_id, "info"],
        "each line carries the job's reference",
      );
    }
    // 4 entries: 2 new, 1 repeating a GUID, 1 without a link (skipped).
    assert.deepEqual(attrs(await done("parse.completed"), "source_id", "items_fetched"), [{ source_id: good.id, items_fetched: 4 }]);
    const missing = await done("entry.missing_fields");
    assert.deepEqual(attrs(missing, "source_id", "guid", "level"), [{ source_id: good.id, guid: "spans-3", level: "warn" }]);
    assert.deepEqual(attrs(await done("dedupe.completed"), "source_id", "new", "duplicate"), [{ source_id: good.id, new: 2, duplicate: 1 }]);
    assert.deepEqual(attrs(await done("refresh.completed"), "sources.success", "sources.failure"), [{ "sources.success": 1, "sources.failure": 1 }]);
    assert.equal((await done("events.suppressed")).length, 0, "under SPAN_EVENTS_MAX nothing is held back");

    const metrics = parsePrometheusText((await p.request("GET", "/metrics", { token: TOKENS.admin })).body);
    assert.equal(metrics.get("rss_fetch_items_total").type, "counter");
    assert.equal(sampleValue(metrics, "rss_fetch_items_total", { source_id: good.id, status: "new" }), 2);
    assert.equal(sampleValue(metrics, "rss_fetch_items_total", { source_id: good.id, status: "duplicate" }), 1);
    assert.equal(sampleValue(metrics, "rss_fetch_errors_total", { source_id: gone.id, error_type: "http_404" }), 1);
    assert.equal(sampleValue(metrics, "rss_fetch_errors_total", { source_id: good.id, error_type: "http_404" }), undefined);
    assert.equal(metrics.get("rss_fetch_duration_seconds").type, "summary");
    const duration = (source_id, result) => [
      sampleValue(metrics, "rss_fetch_duration_seconds_count", { source_id, result }),
      sampleValue(metrics, "rss_fetch_duration_seconds_sum", { source_id, result }),
    ];
    const [okCount, okSecs] = duration(good.id, "success");
    assert.equal(okCount, 1);
    assert.ok(okSecs >= 0 && okSecs < FEED_TIMEOUT_SECS, `${okSecs} s`);
    assert.deepEqual(duration(good.id, "failure"), [0, 0]);
    assert.equal(duration(gone.id, "failure")[0], 1);

    // Nothing due: refresh.no_sources, and no refresh.completed.
    await admin("PATCH", `/${gone.id}`, { is_active: false });
    const idle = await refresh({});
    assert.equal((await linesOf(idle, "refresh.no_sources", "refresh.no_sources")).length, 1);
    assert.equal(logs.of(idle.id).filter((l) => l.event === "refresh.completed").length, 0);
    // A disabled source asked for by id: source.inactive.
    const inactive = await refresh({ source_id: gone.id, force_refresh: true });
    assert.deepEqual(attrs(await linesOf(inactive, "source.inactive", "refresh.no_sources"), "source_id"), [{ source_id: gone.id }]);
    // An unknown source: source.not_found, and the job is dead.
    const unknown = "00000000-0000-4000-8000-00000000abcd";
    const missingJob = await refresh({ source_id: unknown }, { max_attempts: 1 });
    assert.equal(missingJob.status, "dead");
    const notFound = await linesOf(missingJob, "source.not_found", "source.not_found");
    assert.deepEqual(attrs(notFound, "source_id", "level"), [{ source_id: unknown, level: "warn" }]);

    // The counters only grow: a second failure of another type is its own series.
    await admin("PATCH", `/${gone.id}`, { is_active: true });
    app.script("/spans/gone.xml", [{ status: 503 }]);
    await refresh({ source_id: gone.id, force_refresh: true }, { max_attempts: 1 });
    const again = parsePrometheusText((await p.request("GET", "/metrics", { token: TOKENS.admin })).body);
    assert.equal(sampleValue(again, "rss_fetch_errors_total", { source_id: gone.id, error_type: "http_404" }), 1);
    assert.equal(sampleValue(again, "rss_fetch_errors_total", { source_id: gone.id, error_type: "http_503" }), 1);
    assert.equal(sampleValue(again, "rss_fetch_duration_seconds_count", { source_id: gone.id, result: "failure" }), 2);
  });
});
