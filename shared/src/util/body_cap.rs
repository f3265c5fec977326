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

    /// Appends one chunk; past the cap it keeps what fits and refuses the rest (stop reading),
    /// so a reader that keeps a cut body has its first `cap` bytes.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), OverCap> {
        let room = self.cap - self.bytes.len();
        self.bytes
            .extend_from_slice(&chunk[..chunk.len().min(room)]);
        if chunk.len() > room {
            return Err(OverCap(self.cap));
        }
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
        let mut cut = CappedBody::new(3);
        assert_eq!(cut.push(b"abcd"), Err(OverCap(3)));
        assert_eq!(cut.into_bytes(), b"abc");
    }
}
