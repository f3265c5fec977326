//! An incoming request as the routes read it: the runtime's own Request, its method, path,
//! query, headers and body. `worker::Request` would also read `request.cf` on every request, an
//! object the local runtime builds afresh per read (4% of a single enqueue's CPU in the producer,
//! docs/performance.md "Benchmark"), which no route uses.

use jobs_shared::api::route::{path_of_url, query_of_url};
use worker::wasm_bindgen_futures::JsFuture;
use worker::{js_sys, ByteStream, Headers};

pub struct Request {
    inner: web_sys::Request,
    url: String,
}

impl Request {
    pub fn new(inner: web_sys::Request) -> Request {
        let url = inner.url();
        Request { inner, url }
    }

    /// As HTTP spells it: "GET".
    pub fn method(&self) -> String {
        self.inner.method()
    }

    pub fn path(&self) -> &str {
        path_of_url(&self.url)
    }

    /// The query string, without its `?` (empty when there is none).
    pub fn query(&self) -> &str {
        query_of_url(&self.url)
    }

    pub fn headers(&self) -> Headers {
        Headers(self.inner.headers())
    }

    /// The whole body, in one read.
    pub async fn bytes(&mut self) -> worker::Result<Vec<u8>> {
        let buffer = JsFuture::from(self.inner.array_buffer()?).await?;
        Ok(js_sys::Uint8Array::new(&buffer).to_vec())
    }

    /// The body chunk by chunk; none when the request has no body, or it was read already (a
    /// used stream is locked: reading it again would panic).
    pub fn stream(&mut self) -> Option<ByteStream> {
        if self.inner.body_used() {
            return None;
        }
        self.inner.body().map(ByteStream::from)
    }
}
