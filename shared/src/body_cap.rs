//! A body read in chunks that stops at a hard cap: what an untrusted peer sends (a chunked
//! request without Content-Length, a feed that never ends) is refused as soon as it passes the
//! cap, never buffered whole first. The Workers feed it the chunks of their byte streams.

/// The bytes read so far, never more than `cap`.
#[derive(Debug)]
pub struct CappedBody {
    cap: usize,
    bytes: Vec<u8>,
}

/// The body went past its cap (the value is the cap, in bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverCap(pub usize);

impl CappedBody {
    pub fn new(cap: usize) -> CappedBody {
        CappedBody {
            cap,
            bytes: Vec::new(),
        }
    }

    /// Appends one chunk; past the cap the body is refused (stop reading).
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), OverCap> {
        if self.bytes.len() + chunk.len() > self.cap {
            return Err(OverCap(self.cap));
        }
        self.bytes.extend_from_slice(chunk);
        Ok(())
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_fits_and_refuses_the_chunk_that_passes_the_cap() {
        let mut body = CappedBody::new(5);
        assert_eq!(body.push(b"ab"), Ok(()));
        assert_eq!(body.push(b"cde"), Ok(()));
        assert_eq!(body.push(b""), Ok(()));
        assert_eq!(body.push(b"f"), Err(OverCap(5)));
        assert_eq!(body.into_bytes(), b"abcde");
        assert_eq!(CappedBody::new(3).push(b"abcd"), Err(OverCap(3)));
    }
}
